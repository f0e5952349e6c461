/**
 * Defragment: reclaim the space LevelDB still holds for deleted and overwritten records
 * (what compaction of the store's history and of the Raft log left behind), by running
 * LevelDB's manual compaction (classic-level `compactRange`) over the database, one range at
 * a time: each of the store's sublevels, then the whole keyspace (Raft log, registry).
 * LevelDB compacts on its own background thread and keeps serving reads and writes
 * meanwhile, and the member yields to its event loop between ranges, so nothing stops while
 * it runs; unlike etcd's defragment, which holds the backend's write lock throughout.
 *
 * LevelDB's manual compaction merges each level into the next, but never rewrites the files
 * of the lowest level that has any: a small database flushed once into a single table keeps
 * every dead record. So each range first gets a write that spans it, a put and a delete of
 * its two bounds in one batch (keys that never hold data: a sublevel's bare prefix, which
 * would be an empty key, and the key just past the sublevel; readers never see a key put
 * and deleted in one atomic batch). The flushed table then overlaps every level in the
 * range, and the compaction carries it, and every dead record, down to the last level.
 *
 * One defragment at a time: a call while one runs shares its result.
 */
import type { Level } from 'level';
import type { Logger } from './logger.js';
import { dataSize } from './util.js';

export interface DefragDeps {
  // biome-ignore lint/suspicious/noExplicitAny: the member's one LevelDB.
  db: Level<any, any>;
  dbDir: string;
  logger: Logger;
  /** Called with the size after defragmenting (the quota samples it). */
  onDone?(sizeAfter: number): void;
}

export interface DefragResult {
  dbSizeBefore: number;
  dbSizeAfter: number;
}

/** The store's sublevels first (most of the reclaimable space), then everything. */
const STEPS: ReadonlyArray<readonly [string, string]> = [
  ...['hist', 'rev', 'kv', 'lease', 'meta'].map(
    (name) => [`!mvcc!!${name}!`, `!mvcc!!${name}"`] as const,
  ),
  ['\u0000', '\u00ff'],
];

export class Defragmenter {
  private running: Promise<DefragResult> | undefined;

  constructor(private readonly d: DefragDeps) {}

  run(): Promise<DefragResult> {
    this.running ??= this.once().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async once(): Promise<DefragResult> {
    const started = performance.now();
    const dbSizeBefore = await dataSize(this.d.dbDir);
    this.d.logger.info({ dbSize: dbSizeBefore }, 'defragmenting');
    const db = this.d.db as unknown as {
      compactRange(start: Uint8Array, end: Uint8Array): Promise<void>;
      batch(
        ops: Array<
          { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array }
        >,
        options: { sync: boolean },
      ): Promise<void>;
    };
    const empty = new Uint8Array(0);
    for (const [from, to] of STEPS) {
      const start = Buffer.from(from, 'latin1');
      const end = Buffer.from(to, 'latin1');
      await db.batch(
        [
          { type: 'put', key: start, value: empty },
          { type: 'put', key: end, value: empty },
          { type: 'del', key: start },
          { type: 'del', key: end },
        ],
        { sync: false },
      );
      await db.compactRange(start, end);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    const dbSizeAfter = await dataSize(this.d.dbDir);
    this.d.onDone?.(dbSizeAfter);
    this.d.logger.info(
      {
        dbSizeBefore,
        dbSizeAfter,
        reclaimed: dbSizeBefore - dbSizeAfter,
        ms: Math.round(performance.now() - started),
      },
      'finished defragmenting',
    );
    return { dbSizeBefore, dbSizeAfter };
  }
}
