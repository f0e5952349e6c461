/**
 * `--scheduler` and `--scheduler-seed`: the scheduler is a part of the control plane, so its
 * switch is the parts' one mechanism (bare, `=value`, a separate true/false, the
 * environment, `--control-plane`), and bad values are refused with a clear error naming
 * the flag. The graceful Pod deletion default follows the simulated nodes.
 */
import t from 'tap';
import { controlPlaneEnabled, controlPlaneOptions } from '../../src/controlplane/serve.js';
import { resolveConfig } from '../../src/server/config.js';
import { parseServeArgs, SERVE_USAGE } from '../../src/server/flags.js';

const cfg = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  resolveConfig(parseServeArgs(args, env));
const sched = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  controlPlaneOptions(cfg(args, env)).scheduler === true;

t.test(
  'the scheduler is off by default; on bare, with a value, from the environment or with --control-plane',
  async (t) => {
    t.equal(sched([]), false);
    t.equal(controlPlaneEnabled(cfg([])), false, 'no part: no control plane');
    t.equal(cfg([]).controlPlane.schedulerSeed, undefined);
    t.equal(sched(['--scheduler']), true, 'bare, last');
    t.equal(sched(['--scheduler', '--name', 'x']), true, 'bare, before another flag');
    t.equal(controlPlaneEnabled(cfg(['--scheduler'])), true, 'the scheduler alone');
    t.equal(sched(['--scheduler', 'false']), false);
    t.equal(sched(['--scheduler', 'true']), true);
    t.equal(sched(['--scheduler=true']), true);
    t.equal(sched(['--scheduler=false']), false);
    t.equal(sched([], { ETCETERA_SCHEDULER: 'true' }), true);
    t.equal(sched(['--control-plane']), true, '--control-plane runs it like every part');
    t.equal(sched(['--control-plane', '--scheduler=false']), false);
    t.equal(sched(['--control-plane', '--scheduler', 'false']), false);
    // The same mechanism serves every switch.
    t.equal(
      controlPlaneOptions(cfg(['--control-plane', '--controllers', 'false'])).controllers,
      false,
    );
    t.equal(cfg(['--scheduler-seed', '42']).controlPlane.schedulerSeed, 42);
    t.same(controlPlaneOptions(cfg(['--scheduler', '--scheduler-seed', '42'])).schedulerOptions, {
      seed: 42,
    });
    t.equal(cfg([], { ETCETERA_SCHEDULER_SEED: '7' }).controlPlane.schedulerSeed, 7);
    t.match(SERVE_USAGE, /--scheduler-seed/);
    t.match(SERVE_USAGE, /--scheduler {2}/);
  },
);

t.test('graceful Pod deletion is on by default exactly when the simulated nodes run', async (t) => {
  const graceful = (args: string[]) => cfg(args).controlPlane.gracefulPodDeletion;
  t.equal(graceful([]), false, 'no control plane');
  t.equal(graceful(['--controllers']), false, 'controllers alone: no kubelet to finish it');
  t.equal(graceful(['--scheduler']), false, 'scheduler alone');
  t.equal(graceful(['--nodes', '2']), true, 'simulated nodes');
  t.equal(graceful(['--control-plane']), true, '--control-plane: 3 nodes');
  t.equal(graceful(['--control-plane', '--nodes', '0']), false, '--control-plane without nodes');
  t.equal(graceful(['--controllers', '--graceful-pod-deletion', 'true']), true, 'explicit');
  t.equal(graceful(['--nodes', '2', '--graceful-pod-deletion', 'false']), false, 'explicit');
});

t.test('bad values are refused, naming the flag', async (t) => {
  t.throws(() => cfg(['--scheduler', 'maybe']), {
    code: 'ERR_INVALID_ARGUMENT',
    message: /--scheduler must be true or false/,
  });
  t.throws(() => cfg(['--scheduler=maybe']), {
    code: 'ERR_INVALID_ARGUMENT',
    message: /--scheduler must be true or false/,
  });
  t.throws(() => cfg(['--controllers', 'maybe']), {
    code: 'ERR_INVALID_ARGUMENT',
    message: /--controllers must be true or false/,
  });
  t.throws(() => cfg([], { ETCETERA_SCHEDULER: 'maybe' }), {
    code: 'ERR_INVALID_ARGUMENT',
    message: /--scheduler must be true or false/,
  });
  t.throws(() => cfg(['--scheduler-seed', '-1']), { code: 'ERR_INVALID_ARGUMENT' });
  t.throws(() => cfg(['--scheduler-seed', 'abc']), {
    code: 'ERR_INVALID_ARGUMENT',
    message: /--scheduler-seed must be a number/,
  });
  t.throws(() => cfg(['--scheduler-seed', '99999999999']), {
    code: 'ERR_INVALID_ARGUMENT',
    message: /--scheduler-seed must be an integer from 0 to 2147483647/,
  });
});
