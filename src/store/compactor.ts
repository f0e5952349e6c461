/**
 * Physical compaction: removing history that a compaction made unreachable.
 *
 * Compaction has two halves. The logical half is part of apply: the compaction revision C is
 * written with the command, and from then on reads below C fail, so the result of every
 * allowed read is already fixed. This physical half runs afterwards in the background, in
 * small batches so that writers never wait long behind it:
 *   hist: for each key, of its versions at revisions <= C only the newest survives, and not
 *         even that one when it is a deletion;
 *   rev:  change records below C go (a watch may still start at C itself, as in etcd).
 * Reads at revisions >= C give the same answers before, during and after this pass, and every
 * read uses a LevelDB snapshot, so the pass needs no coordination with them. Progress is
 * recorded in meta `compactDone`; a reopened store finishes an interrupted pass.
 */
import type { BatchOp, StoreDb } from './db.js';
import { decodeHistKey, encodeRevKey, histKeyPrefix, u64 } from './encoding.js';
import { META_COMPACT_DONE, READ_CHUNK } from './reader.js';

export interface CompactorOptions {
  /** Deletions per LevelDB batch. Bounds how long one batch can hold up a writer. */
  batchSize: number;
}

export class Compactor {
  private target = -1;
  private done: number;
  private running: Promise<void> | undefined;
  private failure: unknown;

  constructor(
    private readonly db: StoreDb,
    done: number,
    private readonly options: CompactorOptions,
  ) {
    this.done = done;
  }

  /** Physically compacts up to `rev` (in the background; a newer target supersedes). */
  schedule(rev: number): void {
    if (rev <= this.target || rev <= this.done) return;
    this.target = rev;
    this.running ??= this.loop().finally(() => {
      this.running = undefined;
    });
  }

  /** Resolves when no pass is running (used by close and by tests). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
    if (this.failure) throw this.failure;
  }

  /** After a restore from a snapshot: the store's own record of finished work. */
  reset(done: number): void {
    this.done = done;
    this.target = Math.min(this.target, done);
  }

  get finishedRevision(): number {
    return this.done;
  }

  private async loop(): Promise<void> {
    try {
      while (this.target > this.done) {
        const rev = this.target;
        await this.compactHistory(rev);
        await this.compactChanges(rev);
        await this.db.write(
          [{ type: 'put', sublevel: this.db.meta, key: META_COMPACT_DONE, value: u64(rev) }],
          false,
        );
        this.done = rev;
      }
    } catch (e) {
      this.failure = e;
    }
  }

  private async flush(ops: BatchOp[]): Promise<void> {
    if (ops.length === 0) return;
    await this.db.write(ops.splice(0), false);
    // Let applies and reads run between batches.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  private async compactHistory(rev: number): Promise<void> {
    const snapshot = this.db.snapshot();
    const it = this.db.hist.iterator({ snapshot });
    const ops: BatchOp[] = [];
    let group: Uint8Array | undefined;
    let newest: { key: Uint8Array; tombstone: boolean } | undefined;
    const endGroup = () => {
      if (newest?.tombstone) ops.push({ type: 'del', sublevel: this.db.hist, key: newest.key });
      newest = undefined;
    };
    try {
      for (;;) {
        const entries = await it.nextv(READ_CHUNK);
        if (entries.length === 0) break;
        for (const [k, v] of entries) {
          const prefix = histKeyPrefix(k);
          if (!group || Buffer.compare(group, prefix) !== 0) {
            endGroup();
            group = Uint8Array.from(prefix);
          }
          if (decodeHistKey(k).rev > rev) continue;
          // An older version at or below the target is superseded by this one.
          if (newest) ops.push({ type: 'del', sublevel: this.db.hist, key: newest.key });
          newest = { key: Uint8Array.from(k), tombstone: v.length === 0 };
        }
        if (ops.length >= this.options.batchSize) await this.flush(ops);
      }
      endGroup();
      await this.flush(ops);
    } finally {
      await it.close();
      await snapshot.close();
    }
  }

  private async compactChanges(rev: number): Promise<void> {
    for (;;) {
      const it = this.db.rev.keys({ lt: encodeRevKey(rev, 0), limit: this.options.batchSize });
      const keys = await it.nextv(this.options.batchSize);
      await it.close();
      if (keys.length === 0) return;
      await this.flush(keys.map((key) => ({ type: 'del', sublevel: this.db.rev, key })));
    }
  }
}
