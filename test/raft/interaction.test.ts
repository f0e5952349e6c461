/**
 * Golden interaction tests: every script in testdata/*.txt runs against the core and its
 * output must equal the expected output committed in the script. To regenerate the
 * expectations after an intended change: `REWRITE=1 npx tap test/raft/interaction.test.ts`,
 * then review the diff like any code change.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { repoPath } from '../paths.js';
import { InteractionEnv } from './interaction/env.js';
import { handlers } from './interaction/handlers/index.js';
import { formatScript, parseScript } from './interaction/script.js';

const dir = pathToFileURL(`${repoPath('test', 'raft', 'testdata')}/`);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.txt'))
  .sort();
const rewrite = process.env.REWRITE === '1';

t.ok(files.length >= 8, 'the scenario scripts are present');

for (const file of files) {
  t.test(file, async (t) => {
    const path = new URL(file, dir);
    const blocks = parseScript(readFileSync(path, 'utf8'));
    const env = new InteractionEnv();
    const outputs = blocks.map((b) => {
      const h = handlers[b.command.name];
      if (h === undefined) throw new Error(`${file}:${b.line}: unknown command ${b.command.name}`);
      return h(env, b.command).join('\n');
    });
    if (rewrite) {
      writeFileSync(path, formatScript(blocks, outputs));
      t.skip(`rewrote ${file}: nothing compared`, () => {});
      return;
    }
    for (const [k, b] of blocks.entries()) {
      t.equal(outputs[k], b.expected, `${file}:${b.line} ${b.text}`);
    }
  });
}
