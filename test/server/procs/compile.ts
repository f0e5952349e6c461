/**
 * Child processes of the multi-process tests run the CLI as plain JavaScript. Under tap's
 * TypeScript loader every child would transpile every module again at start (seconds each
 * on a busy machine); instead the files src/cli.ts reaches are transpiled (types stripped,
 * no type check) into .tap/server-build/, inside the repository so that node_modules resolve
 * as from src/. The output is cached by content hash, so a second test file or a second run
 * transpiles only what changed; writes are atomic (temp file + rename), so test files
 * running in parallel can share the directory.
 */
import { createHash } from 'node:crypto';
import { cp, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { REPO } from '../../paths.js';

const ROOT = REPO;
const SRC = join(ROOT, 'src');
const OUT = join(ROOT, '.tap', 'server-build');
const IMPORT = /(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)\.js'/g;

const OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.ES2022,
  target: ts.ScriptTarget.ES2022,
  esModuleInterop: true,
  sourceMap: false,
};

async function compileOne(file: string, text: string): Promise<void> {
  const hash = createHash('sha1').update(text).digest('hex');
  const out = join(OUT, relative(ROOT, file)).replace(/\.ts$/, '.js');
  const stamp = `// source sha1 ${hash}\n`;
  const existing = await readFile(out, 'utf8').catch(() => '');
  if (existing.includes(stamp)) return;
  const js = ts.transpileModule(text, { compilerOptions: OPTIONS, fileName: file }).outputText;
  // The shebang must stay first; the stamp goes after it.
  const body = js.startsWith('#!') ? js.replace(/\n/, `\n${stamp}`) : stamp + js;
  await mkdir(dirname(out), { recursive: true });
  const tmp = `${out}.${process.pid}.tmp`;
  await writeFile(tmp, body);
  await rename(tmp, out);
}

/** Transpiles src/cli.ts and every module it imports (transitively); returns the CLI's path. */
export async function compileCli(): Promise<string> {
  const entry = join(SRC, 'cli.ts');
  const seen = new Set<string>([entry]);
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    const text = await readFile(file, 'utf8');
    for (const m of text.matchAll(IMPORT)) {
      const dep = resolve(dirname(file), `${m[1]}.ts`);
      if (!seen.has(dep)) {
        seen.add(dep);
        queue.push(dep);
      }
    }
    await compileOne(file, text);
  }
  // The gRPC face loads etcd's .proto files from beside its loader, as the build copies them.
  await cp(join(SRC, 'wire', 'proto'), join(OUT, 'src', 'wire', 'proto'), {
    recursive: true,
    filter: (src) => !src.endsWith('.ts'),
  });
  // The dashboard serves its page, script and style from beside its module, as the build copies them.
  const assets = join('api', 'dashboard', 'assets');
  await cp(join(SRC, assets), join(OUT, 'src', assets), { recursive: true });
  return join(OUT, 'src', 'cli.js');
}
