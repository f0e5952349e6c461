/**
 * The folders' import rules (docs/ARCHITECTURE.md): every relative import, static or
 * dynamic, of a file under a ruled folder must land in one of the folders it may use. Each
 * offending import is reported with its file.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Folder (or file) → the folders and files its relative imports may reach. */
const RULES: Record<string, readonly string[]> = {
  // A client of the Kubernetes API, never of server, store or cache internals.
  'src/scheduler': ['src/scheduler', 'src/client', 'src/wire'],
  // Server internals are out of bounds for the client (it may use the wire shapes).
  'src/client': ['src/client', 'src/wire', 'src/errors.ts'],
};

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)'(\.{1,2}\/[^']+)'/g;

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

function within(target: string, allowed: string): boolean {
  return target === allowed || target.startsWith(`${allowed}/`);
}

for (const [folder, allowed] of Object.entries(RULES)) {
  t.test(`${folder} imports only ${allowed.join(', ')}`, async (t) => {
    const sources = files(join(ROOT, folder));
    t.ok(sources.length > 0, `${folder} has sources`);
    const bad: string[] = [];
    for (const file of sources) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(IMPORT)) {
        const spec = m[1] as string;
        const target = relative(ROOT, resolve(dirname(file), spec)).replace(/\.js$/, '.ts');
        if (!allowed.some((a) => within(target, a))) bad.push(`${relative(ROOT, file)} → ${spec}`);
      }
    }
    t.same(bad, [], 'no import outside the allowed folders');
  });
}

t.test('the rule catches an import that breaks it', async (t) => {
  const sample =
    "import { Store } from '../store/store.js';\nconst m = await import('../server/member.js');";
  const found = [...sample.matchAll(IMPORT)].map((m) => m[1]);
  t.same(found, ['../store/store.js', '../server/member.js']);
  const target = relative(ROOT, resolve(join(ROOT, 'src/scheduler'), '../store/store.js'));
  t.notOk(RULES['src/scheduler']?.some((a) => within(target.replace(/\.js$/, '.ts'), a)));
});
