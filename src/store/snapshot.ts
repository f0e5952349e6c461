/**
 * Whole-store snapshots, for Raft: a member that is too far behind gets the leader's store as
 * one blob and replaces its own with it.
 *
 * Format (version 1): the magic "ETCSNAP1", then records until the end:
 *   sublevel id (1 byte) ‖ key length (u32 BE) ‖ key ‖ value length (u32 BE) ‖ value
 * Sublevel ids: 0 kv, 1 hist, 2 rev, 3 lease, 4 meta. The meta records carry the revision,
 * the compaction revisions and the applied index, so a restored store is exactly the
 * exported one.
 */
import { EtceteraError } from '../errors.js';
import type { BatchOp, Snapshot, StoreDb, Sub } from './db.js';
import { READ_CHUNK } from './reader.js';

const MAGIC = Buffer.from('ETCSNAP1');

function sublevels(db: StoreDb): Sub[] {
  return [db.kv, db.hist, db.rev, db.lease, db.meta];
}

/** Serialises every record of the store as seen by `snapshot`. */
export async function exportRecords(db: StoreDb, snapshot: Snapshot): Promise<Uint8Array> {
  const parts: Buffer[] = [MAGIC];
  for (const [id, sub] of sublevels(db).entries()) {
    const it = sub.iterator({ snapshot });
    try {
      for (;;) {
        const entries = await it.nextv(READ_CHUNK);
        if (entries.length === 0) break;
        for (const [k, v] of entries) {
          const head = Buffer.alloc(5);
          head[0] = id;
          head.writeUInt32BE(k.length, 1);
          const mid = Buffer.alloc(4);
          mid.writeUInt32BE(v.length, 0);
          parts.push(head, Buffer.from(k), mid, Buffer.from(v));
        }
      }
    } finally {
      await it.close();
    }
  }
  return new Uint8Array(Buffer.concat(parts));
}

/** The operations that replace the store's records with those of `data` (one atomic batch). */
export async function restoreOps(db: StoreDb, data: Uint8Array): Promise<BatchOp[]> {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (buf.length < MAGIC.length || !buf.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new EtceteraError('ERR_CORRUPT', { detail: 'not a store snapshot' });
  }
  const subs = sublevels(db);
  const ops: BatchOp[] = [];
  for (const sub of subs) {
    const it = sub.keys({});
    for (;;) {
      const keys = await it.nextv(READ_CHUNK * 10);
      if (keys.length === 0) break;
      for (const key of keys) ops.push({ type: 'del', sublevel: sub, key });
    }
    await it.close();
  }
  let at = MAGIC.length;
  const take = (n: number): Uint8Array => {
    if (at + n > buf.length)
      throw new EtceteraError('ERR_CORRUPT', { detail: 'truncated store snapshot' });
    const out = new Uint8Array(buf.subarray(at, at + n));
    at += n;
    return out;
  };
  while (at < buf.length) {
    const head = take(5);
    const sub = subs[head[0] as number];
    if (!sub) throw new EtceteraError('ERR_CORRUPT', { detail: 'bad sublevel in store snapshot' });
    const key = take(Buffer.from(head).readUInt32BE(1));
    const value = take(Buffer.from(take(4)).readUInt32BE(0));
    ops.push({ type: 'put', sublevel: sub, key, value });
  }
  return ops;
}
