/**
 * The control plane's clients stay clients: every import of src/controllers and src/nodes
 * resolves into src/client, src/wire, src/controllers or src/nodes (or a package), never
 * into the server, the store, the watch cache or the API faces — so the same code runs
 * against a remote etcetera.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ALLOWED = ['src/client/', 'src/wire/', 'src/controllers/', 'src/nodes/'];

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Relative specifiers of static and dynamic imports and re-exports. */
export function importsOf(text: string): string[] {
  const out: string[] = [];
  const re =
    /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|import\s+['"]([^'"]+)['"]/g;
  for (const m of text.matchAll(re)) out.push((m[1] ?? m[2] ?? m[3]) as string);
  return out;
}

t.test('the import scanner sees every form', async (t) => {
  t.same(
    importsOf(
      `import a from '../x.js';\nimport type { B } from "../y.js";\nexport { c } from './z.js';\nconst d = await import('../w.js');\nimport './side.js';`,
    ),
    ['../x.js', '../y.js', './z.js', '../w.js', './side.js'],
  );
});

for (const folder of ['src/controllers', 'src/nodes']) {
  t.test(`${folder} imports only the client side`, async (t) => {
    const list = files(join(root, folder));
    t.ok(list.length > 0, `${folder} has sources`);
    const bad: string[] = [];
    for (const f of list) {
      for (const spec of importsOf(readFileSync(f, 'utf8'))) {
        if (!spec.startsWith('.')) continue;
        const target = relative(root, resolve(dirname(f), spec));
        if (!ALLOWED.some((a) => target.startsWith(a)))
          bad.push(`${relative(root, f)} → ${target}`);
      }
    }
    t.same(bad, [], 'no import outside src/client, src/wire, src/controllers, src/nodes');
  });
}
