/**
 * Defragment: reclaim the space LevelDB still holds for deleted and overwritten records
 * (what compaction of the store's history and of the Raft log left behind), by running
 * LevelDB's manual compaction (classic-level `compactRange`) over the database, one range at
 * a time: each of the store's sublevels, then the rest (Raft log, registry). LevelDB compacts
 * on its own background thread and keeps serving reads and writes meanwhile, and the member
 * yields to its event loop between ranges, so nothing stops while it runs; unlike etcd's
 * defragment, which holds the backend's write lock throughout.
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
    };
    for (const [start, end] of STEPS) {
      await db.compactRange(Buffer.from(start, 'latin1'), Buffer.from(end, 'latin1'));
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
