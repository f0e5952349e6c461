/**
 * `--scheduler` and `--scheduler-seed`: bare or with a value, from the environment, and
 * refused with a clear error when malformed (nothing starts).
 */
import t from 'tap';
import { resolveConfig } from '../../src/server/config.js';
import { parseServeArgs, SERVE_USAGE } from '../../src/server/flags.js';

const cfg = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  resolveConfig(parseServeArgs(args, env));

t.test(
  'the scheduler is off by default; on bare, with a value or from the environment',
  async (t) => {
    t.equal(cfg([]).scheduler, false);
    t.equal(cfg([]).schedulerSeed, undefined);
    t.equal(cfg(['--scheduler']).scheduler, true, 'bare, last');
    t.equal(cfg(['--scheduler', '--name', 'x']).scheduler, true, 'bare, before another flag');
    t.equal(cfg(['--scheduler', 'false']).scheduler, false);
    t.equal(cfg(['--scheduler=true']).scheduler, true);
    t.equal(cfg([], { ETCETERA_SCHEDULER: 'true' }).scheduler, true);
    t.equal(cfg(['--scheduler-seed', '42']).schedulerSeed, 42);
    t.equal(cfg([], { ETCETERA_SCHEDULER_SEED: '7' }).schedulerSeed, 7);
    t.match(SERVE_USAGE, /--scheduler-seed/);
  },
);

t.test('bad values are refused, naming the flag', async (t) => {
  t.throws(() => cfg(['--scheduler', 'maybe']), {
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
