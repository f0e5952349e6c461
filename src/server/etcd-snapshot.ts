/**
 * A member's snapshot in etcd's own format: the bbolt database etcd's backend would hold for
 * the same state (etcd 3.4's bucket layout), built page by page from one LevelDB snapshot of
 * the store (src/bbolt/writer.ts), so a store much larger than memory streams without
 * being built whole and writes and reads go on meanwhile.
 *
 * Buckets, as etcd 3.4.23 writes them:
 *   key              rev(8 BE) '_' sub(8 BE) [+ 't' for a deletion] → mvccpb.KeyValue (a
 *                    deletion's holds only the key)
 *   meta             consistent_index → applied index (8 BE); scheduledCompactRev and
 *                    finishedCompactRev → the compaction revision as a revision key
 *                    (main, '_', sub 0), present once the store was compacted
 *   lease            ID (8 BE) → leasepb.Lease {ID, TTL}
 *   members          ID in hex → etcd's member JSON {id, peerURLs, name, clientURLs, isLearner}
 *   members_removed  ID in hex → "removed"
 *   cluster          clusterVersion → "3.4.0"
 *   auth             authRevision → 1 (8 BE), as etcd writes with auth never enabled
 *   authUsers, authRoles, alarm: empty
 *
 * The `key` bucket holds what etcd's would after the same compaction C: every revision from
 * C on (the store's change records; a deletion at C itself is dropped, as etcd drops it), and
 * below C, for each key, its newest version unless that is a deletion (the store's history
 * keeps exactly those). The store does not keep the sub-revision of a version below C; those
 * get sub-revisions 0, 1, ... in key order within their revision (no read or watch can tell,
 * since both start at C or later). The list of those versions' history keys is the one
 * thing held in memory for the whole stream: one entry per key live at C, as the store's
 * key index already holds.
 */
import { type BoltItem, type BoltStream, planBolt } from '../bbolt/writer.js';
import type { Snapshot, StoreDb } from '../store/db.js';
import {
  decodeChange,
  decodeHistKey,
  decodeKv,
  decodeRevKey,
  encodeRevKey,
  histKeyPrefix,
  readU64,
  u64,
} from '../store/encoding.js';
import {
  META_APPLIED,
  META_COMPACT,
  META_REVISION,
  READ_CHUNK,
  readMetaNumber,
} from '../store/reader.js';
import type { Store } from '../store/store.js';
import { etcdProto } from '../wire/proto/index.js';
import type { ClusterRecord } from './registry.js';

/** The cluster version etcd 3.4 records (its major.minor, patch 0). */
export const CLUSTER_VERSION = '3.4.0';

const bytes = (s: string) => Buffer.from(s, 'latin1');

export interface EtcdSnapshotInfo extends BoltStream {
  /** The store revision and compaction revision the snapshot holds. */
  revision: number;
  compactRevision: number;
}

/**
 * Lays out the etcd-format snapshot of `store` and `cluster` as they are now; the bytes
 * stream from `chunks`. The store's LevelDB snapshot is released once `chunks` ends (or is
 * abandoned through its `return`).
 */
export async function etcdSnapshot(
  store: Store,
  cluster: ClusterRecord,
): Promise<EtcdSnapshotInfo> {
  const view = await store.openView();
  try {
    const { db, snapshot } = view;
    const revision = await readMetaNumber(db.meta, META_REVISION, snapshot, 1);
    const compact = await readMetaNumber(db.meta, META_COMPACT, snapshot, -1);
    const applied = await readMetaNumber(db.meta, META_APPLIED, snapshot, 0);
    const survivors = compact > 0 ? await survivorsBelow(db, snapshot, compact) : [];
    const source = () => buckets(db, snapshot, { compact, applied, survivors, cluster });
    const plan = await planBolt(source);
    async function* chunks(): AsyncGenerator<Uint8Array, void> {
      try {
        yield* plan.chunks;
      } finally {
        await view.close();
      }
    }
    return { size: plan.size, chunks: chunks(), revision, compactRevision: Math.max(compact, 0) };
  } catch (e) {
    await view.close();
    throw e;
  }
}

interface Survivor {
  rev: number;
  histKey: Uint8Array;
}

/** History keys of each key's newest version below `compact`, where it is not a deletion. */
async function survivorsBelow(
  db: StoreDb,
  snapshot: Snapshot,
  compact: number,
): Promise<Survivor[]> {
  const out: Survivor[] = [];
  let prefix: Buffer | undefined;
  let best: { rev: number; histKey: Uint8Array; tomb: boolean } | undefined;
  const settle = () => {
    if (best !== undefined && best.rev < compact && !best.tomb)
      out.push({ rev: best.rev, histKey: best.histKey });
    best = undefined;
  };
  const it = db.hist.iterator({ snapshot });
  try {
    for (;;) {
      const entries = await it.nextv(READ_CHUNK);
      if (entries.length === 0) break;
      for (const [k, v] of entries) {
        const p = Buffer.from(histKeyPrefix(k));
        if (prefix === undefined || !prefix.equals(p)) {
          settle();
          prefix = p;
        }
        const rev = readU64(k, k.length - 8);
        if (rev <= compact) best = { rev, histKey: Uint8Array.from(k), tomb: v.length === 0 };
      }
    }
    settle();
  } finally {
    await it.close();
  }
  // Stable: within a revision the keys stay in history order, which is key order.
  out.sort((a, b) => a.rev - b.rev);
  return out;
}

interface Parts {
  compact: number;
  applied: number;
  survivors: Survivor[];
  cluster: ClusterRecord;
}

function buckets(db: StoreDb, snapshot: Snapshot, p: Parts): BoltItem[] {
  const hexId = (id: number) => bytes(id.toString(16));
  const members: BoltItem[] = p.cluster.members
    .map((m) => ({
      key: hexId(m.id),
      value: Buffer.from(
        JSON.stringify({
          id: m.id,
          peerURLs: m.peerURLs,
          ...(m.name ? { name: m.name } : {}),
          ...(m.clientURLs.length > 0 ? { clientURLs: m.clientURLs } : {}),
          ...(m.isLearner ? { isLearner: true } : {}),
        }),
      ),
    }))
    .sort((a, b) => Buffer.compare(a.key, b.key));
  const removed: BoltItem[] = p.cluster.removed
    .map((id) => ({ key: hexId(id), value: bytes('removed') }))
    .sort((a, b) => Buffer.compare(a.key, b.key));
  const meta: BoltItem[] = [{ key: bytes('consistent_index'), value: u64(p.applied) }];
  if (p.compact > 0) {
    const at = encodeRevKey(p.compact, 0);
    meta.push(
      { key: bytes('finishedCompactRev'), value: at },
      { key: bytes('scheduledCompactRev'), value: at },
    );
  }
  const all: BoltItem[] = [
    { key: bytes('alarm'), bucket: [] },
    { key: bytes('auth'), bucket: [{ key: bytes('authRevision'), value: u64(1) }] },
    { key: bytes('authRoles'), bucket: [] },
    { key: bytes('authUsers'), bucket: [] },
    {
      key: bytes('cluster'),
      bucket: [{ key: bytes('clusterVersion'), value: bytes(CLUSTER_VERSION) }],
    },
    { key: bytes('key'), bucket: keyBucket(db, snapshot, p) },
    { key: bytes('lease'), bucket: leaseBucket(db, snapshot) },
    { key: bytes('members'), bucket: members },
    { key: bytes('members_removed'), bucket: removed },
    { key: bytes('meta'), bucket: meta },
  ];
  return all.sort((a, b) => Buffer.compare(a.key, b.key));
}

/** The fields of mvccpb.KeyValue. */
export interface KvFields {
  key: Uint8Array;
  createRevision: number;
  modRevision: number;
  version: number;
  value: Uint8Array;
  lease: number;
}

/** mvccpb.KeyValue with etcd's field numbers; zero fields left out, as etcd's encoder does. */
export function encodeKeyValue(kv: KvFields): Uint8Array {
  const msg: Record<string, unknown> = { key: kv.key };
  if (kv.createRevision) msg.create_revision = kv.createRevision;
  if (kv.modRevision) msg.mod_revision = kv.modRevision;
  if (kv.version) msg.version = kv.version;
  if (kv.value.length > 0) msg.value = kv.value;
  if (kv.lease) msg.lease = kv.lease;
  return etcdProto().type('mvccpb.KeyValue').encode(msg).finish();
}

function tombstoneKey(main: number, sub: number): Uint8Array {
  const k = new Uint8Array(18);
  k.set(encodeRevKey(main, sub), 0);
  k[17] = 0x74; // 't'
  return k;
}

function keyBucket(db: StoreDb, snapshot: Snapshot, p: Parts): AsyncIterable<BoltItem> {
  return {
    async *[Symbol.asyncIterator]() {
      // Below the compaction: each key's surviving version, from history.
      let sub = 0;
      let lastRev = -1;
      for (let i = 0; i < p.survivors.length; i += READ_CHUNK) {
        const part = p.survivors.slice(i, i + READ_CHUNK);
        const values = await db.hist.getMany(
          part.map((s) => s.histKey),
          { snapshot },
        );
        for (const [j, s] of part.entries()) {
          const record = values[j];
          if (record === undefined) continue;
          sub = s.rev === lastRev ? sub + 1 : 0;
          lastRev = s.rev;
          const { key } = decodeHistKey(s.histKey);
          yield { key: encodeRevKey(s.rev, sub), value: encodeKeyValue(decodeKv(key, record)) };
        }
      }
      // From the compaction on: every change record.
      const it = db.rev.iterator({ snapshot, gte: encodeRevKey(Math.max(p.compact, 0), 0) });
      try {
        for (;;) {
          const entries = await it.nextv(READ_CHUNK);
          if (entries.length === 0) break;
          for (const [k, v] of entries) {
            const { main, sub } = decodeRevKey(k);
            const change = decodeChange(v);
            if (change.type === 'DELETE') {
              if (main === p.compact) continue;
              yield { key: tombstoneKey(main, sub), value: encodeKeyValue(deleted(change.key)) };
            } else {
              const kv = decodeKv(change.key, change.record as Uint8Array);
              yield { key: k, value: encodeKeyValue(kv) };
            }
          }
        }
      } finally {
        await it.close();
      }
    },
  };
}

function deleted(key: Uint8Array): KvFields {
  return { key, createRevision: 0, modRevision: 0, version: 0, lease: 0, value: new Uint8Array(0) };
}

function leaseBucket(db: StoreDb, snapshot: Snapshot): AsyncIterable<BoltItem> {
  const type = etcdProto().type('leasepb.Lease');
  return {
    async *[Symbol.asyncIterator]() {
      const it = db.lease.iterator({ snapshot });
      try {
        for (;;) {
          const entries = await it.nextv(READ_CHUNK);
          if (entries.length === 0) break;
          for (const [k, v] of entries) {
            const value = type.encode({ ID: readU64(k, 0), TTL: readU64(v, 0) }).finish();
            yield { key: Uint8Array.from(k), value };
          }
        }
      } finally {
        await it.close();
      }
    },
  };
}
