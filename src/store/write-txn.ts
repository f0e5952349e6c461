/**
 * The write side of one command: the changes of one revision, gathered in memory.
 *
 * A WriteTxn starts at the store's current revision `beginRev`. Its first change claims
 * `beginRev + 1`; every change after it shares that revision with the next sub-revision.
 * Each change updates the key index, the lease attachments and the batch overlay at once, so
 * that later reads in the same command see it, and appends the LevelDB operations and the
 * event. Nothing reaches the disk until the store writes the whole batch.
 */
import { latin1ToBytes } from '../wire/bytes.js';
import type { BatchOp, StoreDb } from './db.js';
import {
  decodeKv,
  encodeChange,
  encodeHistKey,
  encodeKv,
  encodeRevKey,
  TOMBSTONE,
} from './encoding.js';
import type { KeyIndex, KeyMeta } from './key-index.js';
import type { Lessor } from './lessor.js';
import { deletedKv } from './reader.js';
import type { Event, KeyValue, LeaseId, Revision } from './types.js';

/**
 * Values written by commands of the current batch that are not on disk yet, by key
 * (latin1). `null` marks a key deleted in this batch. Keys absent here read from LevelDB.
 */
export type Overlay = Map<string, Uint8Array | null>;

export interface ApplyState {
  readonly db: StoreDb;
  readonly index: KeyIndex;
  readonly lessor: Lessor;
  readonly overlay: Overlay;
  readonly ops: BatchOp[];
}

/** Current values of keys, from the overlay or LevelDB, in one round trip. */
export async function readValues(
  state: ApplyState,
  keys: string[],
): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  const missing: string[] = [];
  for (const k of keys) {
    const v = state.overlay.get(k);
    if (v === undefined) missing.push(k);
    else if (v !== null) out.set(k, v);
  }
  if (missing.length > 0) {
    const found = await state.db.kv.getMany(missing.map(latin1ToBytes));
    for (const [i, k] of missing.entries()) {
      const raw = found[i];
      if (raw) out.set(k, decodeKv(latin1ToBytes(k), raw).value);
    }
  }
  return out;
}

export function toKv(key: string, meta: KeyMeta, value: Uint8Array | undefined): KeyValue {
  return { key: latin1ToBytes(key), ...meta, value: value ?? new Uint8Array(0) };
}

export class WriteTxn {
  readonly events: Event[] = [];
  /**
   * Each changed key's version before this txn (undefined: it did not exist), fixed at its
   * first change. Events carry it as prevKv, as etcd's do (a watch reads prev_kv at the
   * revision before), also for a key's second change in one txn: etcd lets a put in one
   * nested txn be followed by a delete of the key in a later nested txn.
   */
  private readonly before = new Map<string, KeyValue | undefined>();

  constructor(
    private readonly state: ApplyState,
    readonly beginRev: Revision,
  ) {}

  /** The revision this txn's changes carry (and its reads report once it has changed something). */
  get revision(): Revision {
    return (this.events.length > 0 ? this.beginRev + 1 : this.beginRev) as Revision;
  }

  private get writeRev(): Revision {
    return (this.beginRev + 1) as Revision;
  }

  /**
   * Puts `value` (and `lease`) on `key`; `prevValue` is the key's current value, read by the
   * caller (undefined when the key does not exist). Returns the previous version, if any.
   */
  put(
    key: string,
    value: Uint8Array,
    lease: LeaseId,
    prevValue: Uint8Array | undefined,
  ): KeyValue | undefined {
    const { index, lessor, overlay, ops, db } = this.state;
    const prevMeta = index.get(key);
    const rev = this.writeRev;
    const meta: KeyMeta = {
      createRevision: prevMeta ? prevMeta.createRevision : rev,
      modRevision: rev,
      version: prevMeta ? prevMeta.version + 1 : 1,
      lease,
    };
    const kv = toKv(key, meta, value);
    const prevKv = prevMeta ? toKv(key, prevMeta, prevValue) : undefined;
    const eventPrev = this.beforeThisTxn(key, prevKv);
    index.set(key, meta);
    if (prevMeta && prevMeta.lease !== lease) lessor.detach(prevMeta.lease, key);
    if (lease !== 0) lessor.attach(lease, key);
    overlay.set(key, value);
    const record = encodeKv(kv);
    ops.push({ type: 'put', sublevel: db.kv, key: kv.key, value: record });
    ops.push({ type: 'put', sublevel: db.hist, key: encodeHistKey(kv.key, rev), value: record });
    ops.push({
      type: 'put',
      sublevel: db.rev,
      key: encodeRevKey(rev, this.events.length),
      value: encodeChange({
        type: 'PUT',
        prevMod: eventPrev?.modRevision ?? 0,
        key: kv.key,
        record,
      }),
    });
    this.events.push(eventPrev ? { type: 'PUT', kv, prevKv: eventPrev } : { type: 'PUT', kv });
    return prevKv;
  }

  /** Deletes an existing key whose current value the caller read. Returns its last version. */
  delete(key: string, prevValue: Uint8Array | undefined): KeyValue {
    const { index, lessor, overlay, ops, db } = this.state;
    const prevMeta = index.get(key);
    if (!prevMeta) throw new Error(`delete of absent key ${JSON.stringify(key)}`);
    const rev = this.writeRev;
    const prevKv = toKv(key, prevMeta, prevValue);
    const eventPrev = this.beforeThisTxn(key, prevKv);
    index.delete(key);
    if (prevMeta.lease !== 0) lessor.detach(prevMeta.lease, key);
    overlay.set(key, null);
    ops.push({ type: 'del', sublevel: db.kv, key: prevKv.key });
    ops.push({
      type: 'put',
      sublevel: db.hist,
      key: encodeHistKey(prevKv.key, rev),
      value: TOMBSTONE,
    });
    ops.push({
      type: 'put',
      sublevel: db.rev,
      key: encodeRevKey(rev, this.events.length),
      value: encodeChange({
        type: 'DELETE',
        prevMod: eventPrev?.modRevision ?? 0,
        key: prevKv.key,
      }),
    });
    const kv = deletedKv(prevKv.key, rev);
    this.events.push(
      eventPrev ? { type: 'DELETE', kv, prevKv: eventPrev } : { type: 'DELETE', kv },
    );
    return prevKv;
  }

  private beforeThisTxn(key: string, current: KeyValue | undefined): KeyValue | undefined {
    if (!this.before.has(key)) this.before.set(key, current);
    return this.before.get(key);
  }
}
