// Build step: copies the .proto files of src/wire/proto next to the compiled loader (tsc copies
// only TypeScript output). The destination is dist/wire/proto, or the directory given.
import { cpSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dest = process.argv[2] ? resolve(process.argv[2]) : join(root, 'dist', 'wire', 'proto');
cpSync(join(root, 'src', 'wire', 'proto'), dest, {
  recursive: true,
  filter: (src) => !src.endsWith('.ts'),
});
