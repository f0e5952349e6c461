/**
 * Current objects by key prefix, kept from the event stream: the read cache the Kubernetes
 * face lists from.
 *
 * A prefix is loaded once with one `store.range` (read at revision R0); the batches the cache
 * receives meanwhile are held and applied if newer than R0; from then on each batch is applied
 * as it arrives, so a loaded prefix is always at the cache's revision.
 *
 * Listing at an older revision R (inside the window) starts from the current objects and undoes
 * the window's batches after R, newest first, using each event's prevKv: after the undo, each
 * key holds the prevKv of its first change after R, which is its value at R.
 */

import sortedBtree from 'sorted-btree';
import { EtceteraError } from '../errors.js';
import type { Bytes, EventBatch, KeyValue, Revision, WatchableStore } from '../store/types.js';
import { bytesToLatin1, latin1ToBytes, prefixEnd } from '../wire/bytes.js';
import type { WatchCache } from './watch-cache.js';

const BTree = sortedBtree.default;
const newTree = () => new BTree<string, KeyValue>();
type Tree = ReturnType<typeof newTree>;

class PrefixState {
  readonly tree: Tree = newTree();
  /** Batches received while loading; null once loaded. */
  pending: EventBatch[] | null = [];
  readonly ready: Promise<void>;

  constructor(
    readonly prefix: string,
    load: (s: PrefixState) => Promise<void>,
  ) {
    this.ready = load(this);
  }

  applyUnsafe(batch: EventBatch): void {
    if (this.pending !== null) {
      this.pending.push(batch);
      return;
    }
    applyBatch(this.tree, this.prefix, batch);
  }
}

function applyBatch(tree: Tree, prefix: string, batch: EventBatch): void {
  for (const ev of batch.events) {
    const k = bytesToLatin1(ev.kv.key);
    if (!k.startsWith(prefix)) continue;
    if (ev.type === 'PUT') tree.set(k, ev.kv);
    else tree.delete(k);
  }
}

export interface ListResult {
  /** The revision the list is at (the cache's revision, or the one asked for). */
  revision: Revision;
  /** Current objects under the prefix, in key order. */
  kvs: KeyValue[];
}

export class ReadCache {
  private states: PrefixState[] = [];

  constructor(
    private readonly store: WatchableStore,
    private readonly cache: WatchCache,
  ) {}

  /** Starts keeping `prefix` (idempotent). Resolves when it is loaded. */
  ensurePrefix(prefix: Bytes | string): Promise<void> {
    return this.stateFor(typeof prefix === 'string' ? prefix : bytesToLatin1(prefix)).ready;
  }

  /** Feeds one batch to every kept prefix. Runs inside the store's subscribe callback. */
  applyUnsafe(batch: EventBatch): void {
    for (const s of this.states) s.applyUnsafe(batch);
  }

  /** The store was replaced: every prefix reloads. */
  resetUnsafe(): void {
    const prefixes = this.states.map((s) => s.prefix);
    this.states = [];
    for (const p of prefixes) this.stateFor(p).ready.catch(() => undefined);
  }

  /**
   * The objects under `prefix` at the cache's revision, or at `revision` when given. Errors
   * follow the store: ERR_FUTURE_REV above the cache's revision (call waitUntilFresh first),
   * ERR_COMPACTED below the compaction point; and ERR_WATCH_TOO_OLD (HTTP 410 for the
   * Kubernetes face) when the window no longer reaches back to `revision`.
   */
  async list(prefixIn: Bytes | string, revision?: number): Promise<ListResult> {
    const prefix = typeof prefixIn === 'string' ? prefixIn : bytesToLatin1(prefixIn);
    const state = this.covering(prefix) ?? this.stateFor(prefix);
    await state.ready;
    const current = this.cache.revision;
    const at = revision === undefined || revision === 0 ? current : revision;
    if (at > current) throw new EtceteraError('ERR_FUTURE_REV', { currentRevision: current });
    if (at < this.cache.compactRevision) {
      throw new EtceteraError('ERR_COMPACTED', { compactRevision: this.cache.compactRevision });
    }
    if (at < this.cache.ring.coveredFrom - 1) {
      throw new EtceteraError('ERR_WATCH_TOO_OLD', {
        detail: `revision ${at} is older than the window (from ${this.cache.ring.coveredFrom - 1})`,
      });
    }
    const kvs: KeyValue[] = [];
    const high = prefixHigh(prefix);
    state.tree.forRange(prefix, high ?? state.tree.maxKey() ?? '', high === undefined, (_k, v) => {
      kvs.push(v);
    });
    return { revision: at as Revision, kvs: at === current ? kvs : this.undo(kvs, prefix, at) };
  }

  /** The objects at `at`, from the current ones and the window's batches after `at`. */
  private undo(current: KeyValue[], prefix: string, at: number): KeyValue[] {
    const ring = this.cache.ring;
    const changed = new Map<string, KeyValue | null>();
    for (let i = ring.endIndex - 1; i >= ring.startIndex; i--) {
      const batch = ring.at(i).batch;
      if (batch.revision <= at) break;
      for (let j = batch.events.length - 1; j >= 0; j--) {
        const ev = batch.events[j]!;
        const k = bytesToLatin1(ev.kv.key);
        if (k.startsWith(prefix)) changed.set(k, ev.prevKv ?? null);
      }
    }
    if (changed.size === 0) return current;
    const out: KeyValue[] = [];
    for (const kv of current) {
      const k = bytesToLatin1(kv.key);
      if (!changed.has(k)) out.push(kv);
    }
    for (const kv of changed.values()) if (kv !== null) out.push(kv);
    return out.sort((a, b) => Buffer.compare(a.key, b.key));
  }

  private covering(prefix: string): PrefixState | undefined {
    return this.states.find((s) => prefix.startsWith(s.prefix));
  }

  private stateFor(prefix: string): PrefixState {
    const existing = this.states.find((s) => s.prefix === prefix);
    if (existing) return existing;
    const state = new PrefixState(prefix, (s) => this.load(s));
    this.states.push(state);
    return state;
  }

  private async load(s: PrefixState): Promise<void> {
    const keyB = s.prefix === '' ? Uint8Array.of(0) : latin1ToBytes(s.prefix);
    const rangeEnd = s.prefix === '' ? Uint8Array.of(0) : prefixEnd(keyB);
    try {
      const r = await this.store.range({ key: keyB, rangeEnd });
      for (const kv of r.kvs) s.tree.set(bytesToLatin1(kv.key), kv);
      for (const b of s.pending ?? []) if (b.revision > r.revision) applyBatch(s.tree, s.prefix, b);
      s.pending = null;
    } catch (e) {
      this.states = this.states.filter((x) => x !== s);
      throw e;
    }
  }
}

/** The exclusive upper key of a prefix scan, or undefined when it runs to the last key. */
function prefixHigh(prefix: string): string | undefined {
  if (prefix === '') return undefined;
  const end = prefixEnd(latin1ToBytes(prefix));
  return end.length === 1 && end[0] === 0 ? undefined : bytesToLatin1(end);
}
