/** Small helpers of the member: waiting, and the size of the data directory. */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `done` every `stepMs` until it returns true or the deadline (epoch ms) passes. */
export async function untilDeadline(
  deadline: number,
  stepMs: number,
  done: () => boolean,
): Promise<void> {
  while (!done() && Date.now() < deadline) await sleep(stepMs);
}

/** Bytes of the files in `dir` (LevelDB's tables and logs): the member's database size. */
export async function dataSize(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const s = await stat(join(dir, name)).catch(() => undefined);
    if (s?.isFile()) total += s.size;
  }
  return total;
}
