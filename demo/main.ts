/**
 * `npm run demo [-- --no-kubectl] [--readiness-delay MS]`: the control-plane walkthrough of
 * walkthrough.ts against a member started from the compiled CLI, printed as it goes; with
 * kubectl when it is on PATH. Exits 0 when every step was seen, 1 otherwise.
 */
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runWalkthrough } from './walkthrough.js';

const { values: args } = parseArgs({
  options: {
    'no-kubectl': { type: 'boolean', default: false },
    'readiness-delay': { type: 'string', default: '1000' },
  },
});

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {}
  }
  return undefined;
}

const cli = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const kubectl = args['no-kubectl'] ? undefined : onPath('kubectl');
if (!kubectl)
  console.log('kubectl is not used (not on PATH or --no-kubectl): the steps go through src/client');

runWalkthrough({
  command: [process.execPath, cli],
  kubectl,
  readinessDelayMs: Number(args['readiness-delay']),
  log: (line) => console.log(line),
})
  .then((r) => {
    console.log(`done: every step seen via ${r.via}; member exit code ${r.exitCode}`);
    process.exit(r.exitCode === 0 ? 0 : 1);
  })
  .catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  });
