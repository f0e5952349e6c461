// Build step: copies the dashboard's page, script and style (src/api/dashboard/assets) next to
// the compiled module that serves them (tsc copies only TypeScript output). The destination is
// dist/api/dashboard/assets, or the directory given. uPlot is read from its package at run time.
import { cpSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dest = process.argv[2]
  ? resolve(process.argv[2])
  : join(root, 'dist', 'api', 'dashboard', 'assets');
cpSync(join(root, 'src', 'api', 'dashboard', 'assets'), dest, { recursive: true });
