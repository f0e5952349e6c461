/**
 * src/k8s is the Kubernetes domain without HTTP: no file in it, nor any file it reaches
 * through its imports, is in src/api, src/server or src/raft, and none imports an HTTP module
 * (node:http, https, http2, express, ws). Imports are read with TypeScript's own pre-processor
 * (static, dynamic, type-only and re-exports), relative ones followed to their files.
 * The checker is first run on a small tree of temporary files with one bad import of each
 * kind, so that it is known to see them.
 */
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import t from 'tap';
import ts from 'typescript';
import { repoPath } from '../paths.js';

const SRC = repoPath('src');
const FORBIDDEN_DIRS = ['api', 'server', 'raft'];
const HTTP_MODULES = new Set(['http', 'https', 'http2', 'express', 'ws']);

interface Violation {
  file: string;
  imports: string;
  why: string;
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The file a relative specifier names (`./x.js` is `./x.ts` in the sources). */
function resolveRelative(from: string, spec: string): string {
  const base = resolve(dirname(from), spec);
  return base.endsWith('.js') ? `${base.slice(0, -3)}.ts` : base;
}

/**
 * Every file reachable from `roots` through relative imports, checked against the rules;
 * `srcRoot` is the folder whose api/, server/ and raft/ are out of bounds.
 */
function check(roots: readonly string[], srcRoot: string): { seen: number; bad: Violation[] } {
  const seen = new Set<string>();
  const bad: Violation[] = [];
  const queue = [...roots];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const rel = relative(srcRoot, file);
    const top = rel.split(sep)[0] ?? '';
    if (FORBIDDEN_DIRS.includes(top)) bad.push({ file: rel, imports: '', why: `is in src/${top}` });
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const { fileName: spec } of info.importedFiles) {
      if (spec.startsWith('.')) {
        const target = resolveRelative(file, spec);
        const targetTop = relative(srcRoot, target).split(sep)[0] ?? '';
        if (FORBIDDEN_DIRS.includes(targetTop))
          bad.push({ file: rel, imports: spec, why: `reaches into src/${targetTop}` });
        else queue.push(target);
        continue;
      }
      const bare = spec.replace(/^node:/, '').split('/')[0] ?? '';
      if (HTTP_MODULES.has(bare)) bad.push({ file: rel, imports: spec, why: 'is an HTTP module' });
    }
  }
  return { seen: seen.size, bad };
}

t.test('the checker sees each kind of forbidden import', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'etcetera-layering-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    const p = join(dir, path);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, text);
  };
  write('k8s/a.ts', "import { b } from './b.js';\nexport type { X } from '../api/x.js';\n");
  write('k8s/b.ts', "import type { IncomingMessage } from 'node:http';\nexport const b = 1;\n");
  write('k8s/c.ts', "export const c = () => import('../raft/r.js');\nimport '../store/s.js';\n");
  write('store/s.ts', "import { m } from '../server/m.js';\n");
  write('k8s/d.ts', "import express from 'express';\nimport { ok } from './ok.js';\n");
  write('k8s/ok.ts', "import { createHash } from 'node:crypto';\nexport const ok = 1;\n");
  const { bad } = check(tsFiles(join(dir, 'k8s')), dir);
  const found = bad.map((v) => `${v.file} ${v.imports}`).sort();
  t.same(found, [
    `${join('k8s', 'a.ts')} ../api/x.js`,
    `${join('k8s', 'b.ts')} node:http`,
    `${join('k8s', 'c.ts')} ../raft/r.js`,
    `${join('k8s', 'd.ts')} express`,
    `${join('store', 's.ts')} ../server/m.js`,
  ]);
});

t.test(
  'src/k8s imports no HTTP module and nothing from src/api, src/server, src/raft',
  async (t) => {
    const roots = tsFiles(join(SRC, 'k8s'));
    t.ok(
      roots.some((f) => f.endsWith(join('k8s', 'types.ts'))),
      `src/k8s has its files (${roots.length})`,
    );
    const { seen, bad } = check(roots, SRC);
    t.ok(seen > roots.length, `the walk followed imports out of src/k8s (${seen} files)`);
    t.same(
      bad.map((v) => `${v.file} imports ${v.imports || '(itself)'}: ${v.why}`),
      [],
      'no file reached from src/k8s breaks the layering',
    );
  },
);
