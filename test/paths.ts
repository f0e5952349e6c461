/**
 * Where the repository is, for tests that read files beside them (fixtures, recorded answers,
 * docs, the sources the layering checks walk). `npm test` runs the suite compiled by tsc into
 * .build/test/, and a single file can run from test/ through tsx, so a path relative to a
 * test module's own URL would point into .build/ in one case: paths go through here instead.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(from: string): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${from}`);
    dir = up;
  }
  return dir;
}

/** The repository's root directory (the one holding package.json). */
export const REPO = findRoot(dirname(fileURLToPath(import.meta.url)));

/** An absolute path inside the repository, from its root: `repoPath('test', 'x.json')`. */
export function repoPath(...parts: string[]): string {
  return join(REPO, ...parts);
}

/**
 * A module beside the calling test, in the form the caller runs as (`.ts` under tsx, `.js`
 * compiled), for child processes started with the caller's own `process.execArgv`.
 */
export function siblingModule(callerUrl: string, relativeName: string): string {
  const ext = callerUrl.endsWith('.ts') ? '.ts' : '.js';
  return fileURLToPath(new URL(`${relativeName}${ext}`, callerUrl));
}
