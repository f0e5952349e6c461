// `npm test`'s first step: type-checks src, test and bench and compiles them with tsc into
// .build/ (the suite then runs as plain JavaScript, without a TypeScript loader in each of its
// ~150 processes). Compiled tests of deleted test files must not linger, so .build/test goes first.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
rmSync(join(root, '.build', 'test'), { recursive: true, force: true });
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.test.json')], { stdio: 'inherit' });
// Files the compiled modules read from beside themselves, as the package build copies them.
const copy = (script, dest) =>
  execFileSync(process.execPath, [join(root, 'scripts', script), join(root, '.build', 'src', ...dest)], {
    stdio: 'inherit',
  });
copy('copy-proto.mjs', ['wire', 'proto']);
copy('copy-dashboard.mjs', ['api', 'dashboard', 'assets']);
