// Build step: copies the .proto files of src/wire/proto next to the compiled loader in
// <out>/wire/proto (tsc copies only TypeScript output). <out> is the first argument, relative
// to the repository: dist (the default) or .build/src (the benchmarks' build).
import { cpSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = process.argv[2] ?? 'dist';
cpSync(join(root, 'src', 'wire', 'proto'), join(root, out, 'wire', 'proto'), {
  recursive: true,
  filter: (src) => !src.endsWith('.ts'),
});
