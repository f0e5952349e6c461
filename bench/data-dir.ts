/**
 * What the start-time integrity check of a member's data dir costs:
 *   `npm run bench:data-dir [-- --mb 64 --runs 3]`
 *
 * Fills a LevelDB with about `mb` MiB of random (incompressible) values in synced batches,
 * closes it, and then times, `runs` times each: the table check (src/server/leveldb-files.ts,
 * every live table's blocks against their CRC-32C) and a plain LevelDB open + close of the
 * same directory. Prints MiB/s of the check and both times in ms.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Level } from 'level';
import { checkLevelDbFiles } from '../src/server/leveldb-files.js';
import { dataSize } from '../src/server/util.js';

const { values: args } = parseArgs({
  options: {
    mb: { type: 'string', default: '64' },
    runs: { type: 'string', default: '3' },
  },
});
const MB = Number(args.mb);
const RUNS = Number(args.runs);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'etcetera-bench-data-dir-'));
  try {
    const db = new Level<string, Buffer>(dir, { valueEncoding: 'buffer' });
    await db.open();
    const value = 1000;
    const perBatch = 256;
    const batches = Math.ceil((MB << 20) / (value * perBatch));
    for (let b = 0; b < batches; b++) {
      const ops = Array.from({ length: perBatch }, (_, i) => ({
        type: 'put' as const,
        key: `key/${String(b * perBatch + i).padStart(10, '0')}`,
        value: randomBytes(value),
      }));
      await db.batch(ops, { sync: b % 16 === 0 });
    }
    await db.close();
    // One open turns the last log into a table, so everything is in tables.
    const again = new Level(dir);
    await again.open();
    await again.close();
    const bytes = await dataSize(dir);
    const check: number[] = [];
    const open: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      let t0 = performance.now();
      const faults = await checkLevelDbFiles(dir);
      check.push(performance.now() - t0);
      if (faults.length > 0) throw new Error(`faults in a fresh database: ${faults.join('; ')}`);
      t0 = performance.now();
      const d = new Level(dir, { createIfMissing: false });
      await d.open();
      await d.close();
      open.push(performance.now() - t0);
    }
    const best = Math.min(...check);
    console.log(`database ${(bytes / 2 ** 20).toFixed(1)} MiB; load ${loadavg()[0]!.toFixed(1)}`);
    console.log(`table check ms: ${check.map((x) => x.toFixed(0)).join(', ')}`);
    console.log(`plain open+close ms: ${open.map((x) => x.toFixed(0)).join(', ')}`);
    console.log(`table check, best run: ${(bytes / 2 ** 20 / (best / 1000)).toFixed(0)} MiB/s`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
