/**
 * The start-time check of LevelDB's files (src/server/leveldb-files.ts) on real databases
 * written by classic-level: a pristine one has no faults; any byte of a table's blocks
 * flipped, a table cut short or deleted, or a MANIFEST record damaged is a fault.
 */
import { randomBytes } from 'node:crypto';
import { cp, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { Level } from 'level';
import t from 'tap';
import { checkLevelDbFiles } from '../../src/server/leveldb-files.js';

/** A database with compressible and incompressible values, all in tables. */
async function makeDb(dir: string): Promise<void> {
  const db = new Level<string, Buffer>(dir, { valueEncoding: 'buffer' });
  await db.open();
  for (let b = 0; b < 40; b++) {
    const ops = Array.from({ length: 50 }, (_, i) => ({
      type: 'put' as const,
      key: `k/${String(b * 50 + i).padStart(6, '0')}`,
      value: i % 2 === 0 ? randomBytes(100) : Buffer.alloc(100, 'v'),
    }));
    await db.batch(ops);
  }
  await db.close();
  const again = new Level(dir); // turns the log into a table
  await again.open();
  await again.close();
}

async function tables(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.endsWith('.ldb')).map((n) => join(dir, n));
}

t.test('pristine, then damaged', async (t) => {
  const root = t.testdir();
  const pristine = join(root, 'pristine');
  await makeDb(pristine);
  t.same(await checkLevelDbFiles(pristine), [], 'a pristine database has no faults');
  const [table] = await tables(pristine);
  t.ok(table, 'the database has a table');
  const size = (await stat(table!)).size;
  let run = 0;
  await t.resolves(
    fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: size - 49 }), // a byte of a block or its trailer
        fc.integer({ min: 1, max: 255 }),
        async (at, xor) => {
          const dir = join(root, `flip-${run++}`);
          await cp(pristine, dir, { recursive: true });
          const file = join(dir, table!.slice(pristine.length + 1));
          const bytes = await readFile(file);
          bytes[at]! ^= xor;
          await writeFile(file, bytes);
          const faults = await checkLevelDbFiles(dir);
          await rm(dir, { recursive: true });
          if (faults.length === 0) throw new Error(`byte ${at} ^ ${xor} went unnoticed`);
        },
      ),
      { numRuns: 60 },
    ),
    '60 random flipped bytes in the blocks, each one a fault',
  );

  const cut = join(root, 'cut');
  await cp(pristine, cut, { recursive: true });
  const cutTable = (await tables(cut))[0]!;
  await truncate(cutTable, size - 100);
  t.match(await checkLevelDbFiles(cut), [/has \d+ bytes where \d+ were written/]);

  const gone = join(root, 'gone');
  await cp(pristine, gone, { recursive: true });
  await rm((await tables(gone))[0]!);
  t.match(await checkLevelDbFiles(gone), [/table \d+\.ldb is missing/]);

  const manifest = join(root, 'manifest');
  await cp(pristine, manifest, { recursive: true });
  const name = (await readFile(join(manifest, 'CURRENT'), 'utf8')).trim();
  const m = await readFile(join(manifest, name));
  m[10]! ^= 0xff;
  await writeFile(join(manifest, name), m);
  t.match(await checkLevelDbFiles(manifest), [/MANIFEST-\d+: checksum mismatch/]);
});
