// Build step: copies the .proto files of src/wire/proto next to the compiled loader in
// dist/wire/proto (tsc copies only TypeScript output).
import { cpSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
cpSync(join(root, 'src', 'wire', 'proto'), join(root, 'dist', 'wire', 'proto'), {
  recursive: true,
  filter: (src) => !src.endsWith('.ts'),
});
