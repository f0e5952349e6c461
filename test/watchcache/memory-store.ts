/**
 * A small in-memory WatchableStore for the watch cache's tests, with honest semantics:
 * revisions start at 1 and each write that changes something advances by one; history replays
 * one batch per revision with prevKv; compaction keeps, for each key, its newest version at or
 * below the compaction revision (tombstones are not kept, as etcd), so history from exactly
 * the compaction revision shows no DELETE and no prevKv at that revision; reads and history
 * below it fail with ERR_COMPACTED carrying details.compactRevision.
 */

import { EtceteraError } from '../../src/errors.js';
import {
  type Event,
  type EventBatch,
  type KeyRange,
  type KeyValue,
  LeaseId,
  type RangeRequest,
  type RangeResult,
  Revision,
  type WatchableStore,
} from '../../src/store/types.js';
import { normalizeRange, rangeContains } from '../../src/watchcache/keys.js';
import { bytesToLatin1 } from '../../src/wire/bytes.js';

const te = new TextEncoder();
export const b = (s: string): Uint8Array => te.encode(s);

export type WriteOp =
  | { op: 'put'; key: string; value: string }
  | { op: 'delete'; key: string; rangeEnd?: string };

export class MemoryStore implements WatchableStore {
  currentRevision = Revision(1);
  compactRevision = Revision(0);
  private readonly log: EventBatch[] = [];
  private readonly state = new Map<string, KeyValue>();
  private readonly listeners = new Set<(b: EventBatch) => void>();
  private muted = false;
  private readonly resetListeners = new Set<(r: Revision) => void>();

  put(key: string, value: string): Revision {
    return this.txn([{ op: 'put', key, value }]);
  }

  /** Deletes a key or [key, rangeEnd); returns the revision, or the current one if nothing. */
  delete(key: string, rangeEnd?: string): Revision {
    return this.txn([{ op: 'delete', key, rangeEnd }]);
  }

  /** Applies the ops in one revision (when any of them changes something). */
  txn(ops: WriteOp[]): Revision {
    const rev = Revision(this.currentRevision + 1);
    const events: Event[] = [];
    for (const op of ops) {
      if (op.op === 'put') events.push(this.applyPut(op.key, op.value, rev));
      else events.push(...this.applyDelete(op.key, op.rangeEnd, rev));
    }
    if (events.length === 0) return this.currentRevision;
    this.currentRevision = rev;
    const batch: EventBatch = { revision: rev, events };
    this.log.push(batch);
    if (!this.muted) for (const l of this.listeners) l(batch);
    return rev;
  }

  compact(revision: number): void {
    if (revision <= this.compactRevision) {
      throw new EtceteraError('ERR_COMPACTED', { compactRevision: this.compactRevision });
    }
    if (revision > this.currentRevision) {
      throw new EtceteraError('ERR_FUTURE_REV', { currentRevision: this.currentRevision });
    }
    this.compactRevision = Revision(revision);
  }

  /** Applies writes without telling subscribers (they arrive by a snapshot, see resetTo). */
  silently(fn: () => void): void {
    this.muted = true;
    try {
      fn();
    } finally {
      this.muted = false;
    }
  }

  /** Simulates a snapshot install: the revision jumps to `revision` (writes nobody saw). */
  resetTo(revision: number): void {
    this.currentRevision = Revision(revision);
    for (const l of this.resetListeners) l(this.currentRevision);
  }

  async range(req: RangeRequest): Promise<RangeResult> {
    const at = req.revision && req.revision > 0 ? req.revision : this.currentRevision;
    if (at > this.currentRevision) throw new EtceteraError('ERR_FUTURE_REV');
    if (at < this.compactRevision) {
      throw new EtceteraError('ERR_COMPACTED', { compactRevision: this.compactRevision });
    }
    const range = normalizeRange(req.key, req.rangeEnd);
    const kvs = [...this.stateAt(at).values()]
      .filter((kv) => rangeContains(range, bytesToLatin1(kv.key)))
      .sort((x, y) => Buffer.compare(x.key, y.key));
    return { revision: Revision(at), kvs, more: false, count: kvs.length };
  }

  async *history(from: Revision, kr: KeyRange): AsyncGenerator<EventBatch, void, undefined> {
    await Promise.resolve();
    const compact = this.compactRevision;
    if (from < compact) throw new EtceteraError('ERR_COMPACTED', { compactRevision: compact });
    if (from > this.currentRevision + 1) throw new EtceteraError('ERR_FUTURE_REV');
    const upTo = this.currentRevision;
    const range = normalizeRange(kr.key, kr.rangeEnd);
    for (const batch of this.log) {
      if (batch.revision < from || batch.revision > upTo) continue;
      const events = batch.events
        .filter((ev) => rangeContains(range, bytesToLatin1(ev.kv.key)))
        .filter((ev) => batch.revision > compact || ev.type === 'PUT')
        .map((ev) => (batch.revision > compact || !ev.prevKv ? ev : { type: ev.type, kv: ev.kv }));
      if (events.length === 0) continue;
      yield { revision: batch.revision, events };
      if (batch.revision % 7 === 0) await new Promise((r) => setImmediate(r));
    }
  }

  subscribe(listener: (b: EventBatch) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onReset(listener: (r: Revision) => void): () => void {
    this.resetListeners.add(listener);
    return () => this.resetListeners.delete(listener);
  }

  /** Every batch ever applied (ignores compaction): the tests' model of the history. */
  allBatches(): readonly EventBatch[] {
    return this.log;
  }

  private applyPut(key: string, value: string, rev: Revision): Event {
    const k = bytesToLatin1(b(key));
    const prev = this.state.get(k);
    const kv: KeyValue = {
      key: b(key),
      value: b(value),
      createRevision: prev ? prev.createRevision : rev,
      modRevision: rev,
      version: prev ? prev.version + 1 : 1,
      lease: LeaseId(0),
    };
    this.state.set(k, kv);
    return prev ? { type: 'PUT', kv, prevKv: prev } : { type: 'PUT', kv };
  }

  private applyDelete(key: string, rangeEnd: string | undefined, rev: Revision): Event[] {
    const range = normalizeRange(b(key), rangeEnd === undefined ? undefined : b(rangeEnd));
    const gone = [...this.state.entries()]
      .filter(([k]) => rangeContains(range, k))
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    return gone.map(([k, prev]) => {
      this.state.delete(k);
      const kv: KeyValue = {
        key: prev.key,
        value: new Uint8Array(),
        createRevision: Revision(0),
        modRevision: rev,
        version: 0,
        lease: LeaseId(0),
      };
      return { type: 'DELETE', kv, prevKv: prev };
    });
  }

  private stateAt(at: number): Map<string, KeyValue> {
    const m = new Map<string, KeyValue>();
    for (const batch of this.log) {
      if (batch.revision > at) break;
      for (const ev of batch.events) {
        if (ev.type === 'PUT') m.set(bytesToLatin1(ev.kv.key), ev.kv);
        else m.delete(bytesToLatin1(ev.kv.key));
      }
    }
    return m;
  }
}
