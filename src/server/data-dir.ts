/**
 * Opening a member's data dir, and refusing one that lost or altered what it had made
 * durable. Layout:
 *
 *   <data-dir>/db         the member's LevelDB (Raft log, store, registry)
 *   <data-dir>/raft-mark  the durable high-water mark (src/raft/storage/durable-mark.ts);
 *                         it is created right after the database, so it also says "this
 *                         data dir has a database"
 *   <data-dir>/DAMAGED    written when damage was found that LevelDB's open has already
 *                         absorbed, so that every later start refuses too
 *
 * Rules, in order:
 *   1. DAMAGED present: refuse (ERR_DATA_CORRUPT, with what was found).
 *   2. A data dir that has a database (the mark file or LevelDB's CURRENT exists) is opened
 *      with createIfMissing false: LevelDB never creates an empty database in its place.
 *      CURRENT missing, or tables without CURRENT: refuse (ERR_DATA_DIR_INCOMPLETE).
 *   3. Before LevelDB opens it, the MANIFEST and every live table are checked against
 *      LevelDB's own checksums (leveldb-files.ts); a fault: refuse without opening, so that
 *      no compaction rewrites the damage into a valid-looking table.
 *   4. LevelDB's recovery of its `.log` skips a record that fails its checksum and only
 *      says so in its info LOG ("(ignoring error) ... dropping N bytes"); the LOG written by
 *      this open is read, and such a line means acknowledged writes may be gone: DAMAGED is
 *      recorded (the skipped bytes are already dropped, a later open would not see it) and
 *      the start refused. A torn final write is accepted, as etcd's WAL does: a record cut
 *      short at the end of the log (LevelDB drops it silently), or a last record that fails
 *      its checksum with a zeroed 512-byte sector in it and only zeros after it (a power
 *      cut part-way through the write; see tornTail). Whether a dropped tail held anything
 *      acknowledged is the high-water mark's call, at Raft open.
 *   5. A brand-new data dir (nothing of the above) is created with no flags.
 */
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Level } from 'level';
import { EtceteraError } from '../errors.js';
import { DurableMark, syncDir } from '../raft/storage/durable-mark.js';
import type { RaftDb } from '../raft/storage/level-storage.js';
import { checkLevelDbFiles, tornTail } from './leveldb-files.js';

export const DB_DIR = 'db';
export const MARK_FILE = 'raft-mark';
export const DAMAGED_FILE = 'DAMAGED';

export interface OpenDataDir {
  db: RaftDb;
  mark: DurableMark;
  /** True when this call created the database. */
  created: boolean;
}

/** Opens (or creates) the member's database in `dataDir` by the rules above. */
export async function openDataDir(dataDir: string): Promise<OpenDataDir> {
  await mkdir(dataDir, { recursive: true });
  const dbDir = join(dataDir, DB_DIR);
  const damaged = await readFile(join(dataDir, DAMAGED_FILE), 'utf8').catch(() => undefined);
  if (damaged !== undefined) {
    throw corrupt(dataDir, `an earlier start found damage (${DAMAGED_FILE}): ${damaged.trim()}`);
  }
  const markPath = join(dataDir, MARK_FILE);
  let mark = await DurableMark.open(markPath).catch((e: unknown) => {
    throw isCode(e, 'ERR_DATA_CORRUPT')
      ? corrupt(dataDir, String((e as EtceteraError).details.detail))
      : e;
  });
  const hasCurrent = await exists(join(dbDir, 'CURRENT'));
  const names = await readdir(dbDir).catch(() => [] as string[]);
  const tables = names.filter((n) => /\.(ldb|sst)$/.test(n));
  const existing = mark !== undefined || hasCurrent;
  if (!hasCurrent && (existing || tables.length > 0)) {
    throw new EtceteraError('ERR_DATA_DIR_INCOMPLETE', {
      detail: `${dataDir}: LevelDB's CURRENT file is missing from ${dbDir} (${
        mark !== undefined ? 'this data dir had a database' : `${tables.length} tables remain`
      }); refusing to create an empty database in its place`,
    });
  }
  if (existing) {
    const faults = await checkLevelDbFiles(dbDir);
    if (faults.length > 0) throw corrupt(dataDir, `LevelDB files: ${faults.join('; ')}`);
  }
  // Rule 4's exception: a torn final write in the newest log (LevelDB reports it too).
  const logs = names.filter((n) => /^\d+\.log$/.test(n)).sort();
  const newestLog = logs[logs.length - 1];
  const torn =
    newestLog !== undefined &&
    tornTail(await readFile(join(dbDir, newestLog)).catch(() => Buffer.alloc(0)));
  const db: RaftDb = new Level(dbDir, { createIfMissing: !existing });
  try {
    await db.open();
  } catch (e) {
    const text = String((e as { cause?: unknown }).cause ?? e);
    if (/does not exist/.test(text)) {
      throw new EtceteraError(
        'ERR_DATA_DIR_INCOMPLETE',
        { detail: `${dataDir}: ${text}` },
        { cause: e },
      );
    }
    if (/Corruption/i.test(text)) throw corrupt(dataDir, `LevelDB: ${text}`, e);
    throw e;
  }
  try {
    const skipped = (await ignoredErrors(dbDir)).filter(
      (l) => !(torn && l.includes(`${newestLog}: dropping`)),
    );
    if (skipped.length > 0) {
      const what = `LevelDB skipped damaged log records: ${skipped.join('; ')}`;
      await recordDamage(dataDir, what);
      throw corrupt(dataDir, what);
    }
    const created = mark === undefined && !existing;
    mark ??= await DurableMark.create(markPath);
    return { db, mark, created };
  } catch (e) {
    await db.close().catch(() => undefined);
    throw e;
  }
}

/** The lines of LevelDB's info LOG (written by the open just done) that report skipped data. */
async function ignoredErrors(dbDir: string): Promise<string[]> {
  const log = await readFile(join(dbDir, 'LOG'), 'utf8').catch(() => '');
  return log
    .split('\n')
    .filter((l) => /\(ignoring error\)|Corruption:/.test(l))
    .map((l) => l.replace(/^\S+ \S+ /, '').replace(`${dbDir}/`, ''));
}

async function recordDamage(dataDir: string, what: string): Promise<void> {
  const path = join(dataDir, DAMAGED_FILE);
  await writeFile(path, `${new Date().toISOString()} ${what}\n`, { flush: true });
  await syncDir(dataDir);
}

function corrupt(dataDir: string, detail: string, cause?: unknown): EtceteraError {
  return new EtceteraError('ERR_DATA_CORRUPT', { detail: `${dataDir}: ${detail}` }, { cause });
}

function isCode(e: unknown, code: string): boolean {
  return e instanceof EtceteraError && e.code === code;
}

async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined)) !== undefined;
}
