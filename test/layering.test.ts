/**
 * The folder rules of docs/ARCHITECTURE.md, checked on the import graph of src/ (every
 * `import`, `export ... from` and `import type`, read with the TypeScript compiler's own
 * pre-processor, so comments and strings never count):
 *
 * - src/client imports nothing from src/server, src/store, src/api, src/watchcache, src/raft;
 * - src/wire imports nothing in src outside src/wire;
 * - the clients of the API (src/scheduler, src/controllers, src/nodes, src/controlplane)
 *   import only src/client, src/wire, the error catalogue and each other: never server,
 *   store or cache internals, so the same code runs against a remote member (only the glue
 *   that starts a member in the same process, src/controlplane/embedded.ts and serve.ts,
 *   imports the server);
 * - the files directly in src/raft (the pure core) reach no I/O: no Node built-in, no
 *   `level`, `classic-level` or `ws`, not even through a file they import;
 * - src/tier (the API tier over a remote cluster) never imports src/raft, and from
 *   src/store only types (`import type`, or named imports that are all `type`): the store
 *   is elsewhere.
 *
 * The checker is also run on small made-up trees, so a rule that could never fail is caught.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, posix, relative } from 'node:path';
import t from 'tap';
import ts from 'typescript';
import { REPO } from './paths.js';

const ROOT = REPO;

/** A tree of source files: path relative to the repository root → text. */
type Tree = ReadonlyMap<string, string>;

function readTree(dir: string): Tree {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.ts')) {
        out.set(relative(ROOT, p).split('\\').join('/'), readFileSync(p, 'utf8'));
      }
    }
  };
  walk(dir);
  return out;
}

/** What one file imports: files of the tree (resolved paths) and packages (bare names). */
function importsOf(tree: Tree, file: string): { files: string[]; packages: string[] } {
  const files: string[] = [];
  const packages: string[] = [];
  for (const ref of ts.preProcessFile(tree.get(file) ?? '', true, true).importedFiles) {
    const spec = ref.fileName;
    if (spec.startsWith('.')) {
      const target = posix.normalize(posix.join(posix.dirname(file), spec)).replace(/\.js$/, '.ts');
      files.push(target);
    } else {
      packages.push(spec);
    }
  }
  return { files, packages };
}

/**
 * The files of the tree that `file` imports for their values: every import and re-export
 * except those written `import type` / `export type` or whose named bindings are all `type`.
 */
function valueImportsOf(tree: Tree, file: string): string[] {
  const src = ts.createSourceFile(file, tree.get(file) ?? '', ts.ScriptTarget.Latest, false);
  const out: string[] = [];
  const add = (spec: ts.Expression | undefined): void => {
    if (spec === undefined || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) return;
    out.push(posix.normalize(posix.join(posix.dirname(file), spec.text)).replace(/\.js$/, '.ts'));
  };
  for (const st of src.statements) {
    if (ts.isImportDeclaration(st)) {
      const c = st.importClause;
      if (c?.isTypeOnly) continue;
      const named = c?.namedBindings;
      const allTypes =
        c !== undefined &&
        c.name === undefined &&
        named !== undefined &&
        ts.isNamedImports(named) &&
        named.elements.length > 0 &&
        named.elements.every((e) => e.isTypeOnly);
      if (!allTypes) add(st.moduleSpecifier);
    } else if (ts.isExportDeclaration(st) && !st.isTypeOnly) {
      add(st.moduleSpecifier);
    }
  }
  return out;
}

const IO_PACKAGES = new Set(['level', 'classic-level', 'ws']);
const isIo = (pkg: string): boolean =>
  pkg.startsWith('node:') || builtinModules.includes(pkg) || IO_PACKAGES.has(pkg.split('/')[0]!);

const inFolder = (file: string, folder: string): boolean => file.startsWith(`${folder}/`);

/** Folders written as clients of the API (they may import each other). */
const CLIENT_ONLY = ['src/scheduler', 'src/controllers', 'src/nodes', 'src/controlplane'];
/** The glue that starts a member in the same process for the control plane's parts. */
const GLUE = new Set(['src/controlplane/embedded.ts', 'src/controlplane/serve.ts']);
const CLIENT_MAY = ['src/client', 'src/wire', ...CLIENT_ONLY];

/** Every rule broken in `tree`, one line each. */
function violations(tree: Tree): string[] {
  const out: string[] = [];
  const CLIENT_MUST_NOT = ['src/server', 'src/store', 'src/api', 'src/watchcache', 'src/raft'];
  for (const file of tree.keys()) {
    const { files } = importsOf(tree, file);
    if (inFolder(file, 'src/client')) {
      for (const f of files) {
        const bad = CLIENT_MUST_NOT.find((folder) => inFolder(f, folder));
        if (bad) out.push(`${file} imports ${f} (src/client must not import ${bad})`);
      }
    }
    const client = GLUE.has(file)
      ? undefined
      : CLIENT_ONLY.find((folder) => inFolder(file, folder));
    if (client !== undefined) {
      for (const f of files) {
        const ok = f === 'src/errors.ts' || CLIENT_MAY.some((folder) => inFolder(f, folder));
        if (inFolder(f, 'src') && !ok) {
          out.push(
            `${file} imports ${f} (${client} uses only the client, the wire shapes and its peers)`,
          );
        }
      }
    }
    if (inFolder(file, 'src/tier')) {
      for (const f of files) {
        if (inFolder(f, 'src/raft'))
          out.push(`${file} imports ${f} (src/tier never imports src/raft)`);
      }
      for (const f of valueImportsOf(tree, file)) {
        if (inFolder(f, 'src/store'))
          out.push(`${file} imports ${f} for values (src/tier takes only types from src/store)`);
      }
    }
    if (inFolder(file, 'src/wire')) {
      for (const f of files) {
        if (inFolder(f, 'src') && !inFolder(f, 'src/wire')) {
          out.push(`${file} imports ${f} (src/wire imports nothing else in src)`);
        }
      }
    }
  }
  // The pure core: the transitive closure of each top-level src/raft file.
  for (const file of tree.keys()) {
    if (posix.dirname(file) !== 'src/raft') continue;
    const seen = new Set<string>([file]);
    const queue: { file: string; via: string[] }[] = [{ file, via: [file] }];
    while (queue.length > 0) {
      const { file: f, via } = queue.shift()!;
      const { files, packages } = importsOf(tree, f);
      for (const pkg of packages.filter(isIo)) {
        out.push(`${file} reaches I/O package ${pkg} (via ${via.join(' → ')})`);
      }
      for (const next of files) {
        if (!seen.has(next) && tree.has(next)) {
          seen.add(next);
          queue.push({ file: next, via: [...via, next] });
        }
      }
    }
  }
  return out;
}

t.test('src keeps its folder rules', async (t) => {
  const tree = readTree(join(ROOT, 'src'));
  t.ok(tree.size > 100, `read ${tree.size} files`);
  t.ok(tree.has('src/raft/raft.ts') && tree.has('src/client/client.ts'), 'the tree is src/');
  t.same(violations(tree), []);
});

t.test('the checker finds each kind of broken rule', async (t) => {
  const tree = new Map<string, string>([
    ['src/errors.ts', 'export const x = 1;'],
    ['src/store/store.ts', "import { x } from '../errors.js';"],
    ['src/client/a.ts', "import type { S } from '../store/store.js';"],
    ['src/client/b.ts', "export { x } from '../errors.js';"],
    ['src/wire/w.ts', "import { S } from '../store/store.js';\nimport { y } from './v.js';"],
    ['src/wire/v.ts', "import type { E } from '../errors.js';"],
    ['src/raft/core.ts', "import { h } from './helper.js';"],
    ['src/raft/helper.ts', "import { s } from './storage/disk.js';"],
    ['src/raft/storage/disk.ts', "import { open } from 'node:fs/promises';"],
    [
      'src/scheduler/s.ts',
      "import { c } from '../client/k8s/index.js';\nimport { m } from '../server/member.js';",
    ],
    [
      'src/scheduler/t.ts',
      "import { e } from '../errors.js';\nimport { w } from '../wire/k8s.js';",
    ],
    ['src/raft/pure.ts', "// import { open } from 'node:fs';\nconst s = \"from 'level'\";"],
    [
      'src/tier/a.ts',
      "import { Store } from '../store/store.js';\nimport { r } from '../raft/raft.js';",
    ],
    ['src/tier/b.ts', "import { type S, x } from '../store/store.js';"],
    [
      'src/tier/c.ts',
      "import type { S } from '../store/store.js';\nimport { type T } from '../store/types.js';\nexport type { U } from '../store/types.js';",
    ],
  ]);
  const found = violations(tree);
  t.match(found, [
    /^src\/client\/a\.ts imports src\/store\/store\.ts/,
    /^src\/wire\/w\.ts imports src\/store\/store\.ts/,
    /^src\/wire\/v\.ts imports src\/errors\.ts/,
    /^src\/scheduler\/s\.ts imports src\/server\/member\.ts/,
    /^src\/tier\/a\.ts imports src\/raft\/raft\.ts \(src\/tier never imports src\/raft\)/,
    /^src\/tier\/a\.ts imports src\/store\/store\.ts for values/,
    /^src\/tier\/b\.ts imports src\/store\/store\.ts for values/,
    /^src\/raft\/core\.ts reaches I\/O package node:fs\/promises \(via src\/raft\/core\.ts → src\/raft\/helper\.ts → src\/raft\/storage\/disk\.ts\)/,
    /^src\/raft\/helper\.ts reaches I\/O package node:fs\/promises/,
  ]);
  t.equal(found.length, 9, 'comments, strings and files outside the rules do not count');
});
