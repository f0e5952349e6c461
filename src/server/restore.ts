/**
 * `snapshot restore`: a new member's data dir from a snapshot in etcd's format (one that etcd
 * made, or etcetera: src/server/etcd-snapshot.ts), as etcdutl's restore does for etcd.
 *
 * The membership is new, from the flags: member IDs and the cluster ID are derived from
 * --initial-cluster and --initial-cluster-token as a new cluster's are (src/server/ids.ts),
 * so every member of a restored cluster, restored from the same file with the same flags,
 * agrees on them; the snapshot's own members are dropped. The store gets every record of
 * the `key` bucket (etcd's revisions, sub-revisions, tombstones and compaction revisions
 * kept), the leases of the `lease` bucket, and applied index 0: the member starts as a new
 * cluster's member does, with a Raft log holding nothing yet and the restored store.
 *
 * Lease IDs: etcd picks 63-bit lease IDs, etcetera's are below 2^53 (exact JavaScript
 * numbers). An ID beyond 2^53 is mapped to its low 53 bits (1 if those are 0), for the
 * lease and for every key version naming it; the restore is refused should two live leases
 * map to the same ID. Clients keeping such a lease alive must grant a new one.
 *
 * Memory: the file is read page by page and written in batches of 1,000 records; the one
 * thing held for the whole restore is each live key's modRevision (for the store's change
 * records), as the store's own key index holds once the member starts.
 *
 * The file is checked as it is read (src/bbolt/reader.ts: meta checksum, page bounds, key
 * order, and the SHA-256 trailer, which must be there unless skipHashCheck, as etcdutl's) and every record decoded before it is
 * written; the data dir is built under a temporary name beside the target and renamed into
 * place only once complete and fsynced, so a refused snapshot leaves nothing behind.
 */
import { rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { type BoltEntry, BoltReader, type BucketRef } from '../bbolt/reader.js';
import { EtceteraError } from '../errors.js';
import { syncDir } from '../raft/storage/durable-mark.js';
import { type BatchOp, storeDb } from '../store/db.js';
import {
  encodeChange,
  encodeHistKey,
  encodeKv,
  encodeRevKey,
  readU64,
  TOMBSTONE,
  u64,
} from '../store/encoding.js';
import { META_APPLIED, META_COMPACT, META_COMPACT_DONE, META_REVISION } from '../store/reader.js';
import type { KeyValue, LeaseId, Revision } from '../store/types.js';
import { bytesToLatin1 } from '../wire/bytes.js';
import { etcdProto, int64ToNumber, uint64ToString } from '../wire/proto/index.js';
import { findSelf, newCluster } from './bootstrap.js';
import { ClusterState, type MemberConfigInput, resolveConfig } from './config.js';
import { openDataDir } from './data-dir.js';
import { MemberRegistry } from './registry.js';

export interface RestoreOptions
  extends Pick<
    MemberConfigInput,
    'name' | 'dataDir' | 'initialCluster' | 'initialAdvertisePeerUrls' | 'initialClusterToken'
  > {
  /** The snapshot file, ending with the SHA-256 trailer of a saved snapshot stream. */
  file: string;
  /** Accept a file without the trailer (a bare bbolt database), as etcdutl's flag does. */
  skipHashCheck?: boolean;
}

export interface RestoreResult {
  dataDir: string;
  memberId: string;
  clusterId: string;
  revision: number;
  compactRevision: number;
  /** Records of the key bucket restored (versions and deletions). */
  records: number;
  leases: number;
  /** Leases whose etcd ID was beyond 2^53, and so got a new one. */
  remappedLeases: number;
}

const BATCH = 1000;

function layout(detail: string): EtceteraError {
  return new EtceteraError('ERR_SNAPSHOT_LAYOUT', { detail });
}

export async function restoreSnapshot(o: RestoreOptions): Promise<RestoreResult> {
  const config = resolveConfig({ ...o, initialClusterState: ClusterState.NEW, logLevel: 'silent' });
  const cluster = newCluster(config);
  const self = findSelf(cluster.members, config);
  const target = config.dataDir;
  if (await exists(target)) {
    throw new EtceteraError('ERR_RESTORE_DATA_DIR_EXISTS', {
      detail: `${target}: restore only creates a new data dir`,
    });
  }
  const reader = await BoltReader.open(o.file, { trailer: o.skipHashCheck ? 'auto' : 'yes' });
  const temp = join(dirname(target), `.${basename(target)}.restoring-${process.pid}`);
  try {
    const tops = new Map<string, BucketRef>();
    for await (const e of reader.entries()) {
      if (e.bucket !== undefined) tops.set(e.key.toString('latin1'), e.bucket);
    }
    const keyRef = tops.get('key');
    const metaRef = tops.get('meta');
    if (keyRef === undefined || metaRef === undefined)
      throw layout(`no ${keyRef === undefined ? 'key' : 'meta'} bucket`);
    const meta = await readMeta(reader, metaRef);
    await rm(temp, { recursive: true, force: true });
    const { db } = await openDataDir(temp);
    try {
      await MemberRegistry.create(
        db,
        { id: self.id, name: config.name, token: config.initialClusterToken },
        cluster,
      );
      const store = storeDb(db, false);
      const leases = await restoreLeases(reader, tops.get('lease'), store);
      const r = await restoreKeys(reader, keyRef, store, meta.scheduled);
      const revision = Math.max(r.revision, meta.scheduled, 1);
      const metaOps: BatchOp[] = [
        { type: 'put', sublevel: store.meta, key: META_REVISION, value: u64(revision) },
        { type: 'put', sublevel: store.meta, key: META_APPLIED, value: u64(0) },
      ];
      if (meta.scheduled > 0) {
        metaOps.push(
          { type: 'put', sublevel: store.meta, key: META_COMPACT, value: u64(meta.scheduled) },
          {
            type: 'put',
            sublevel: store.meta,
            key: META_COMPACT_DONE,
            value: u64(Math.min(meta.finished, meta.scheduled)),
          },
        );
      }
      await store.write(metaOps, true);
      await db.close();
      await syncDir(temp);
      await rename(temp, target);
      await syncDir(dirname(target));
      return {
        dataDir: target,
        memberId: String(self.id),
        clusterId: cluster.clusterId,
        revision,
        compactRevision: Math.max(meta.scheduled, 0),
        records: r.records,
        leases: leases.count,
        remappedLeases: leases.remapped,
      };
    } finally {
      await db.close().catch(() => undefined);
    }
  } catch (e) {
    await rm(temp, { recursive: true, force: true });
    throw e;
  } finally {
    await reader.close();
  }
}

async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined)) !== undefined;
}

async function values(reader: BoltReader, ref: BucketRef): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for await (const e of reader.entries(ref))
    if (e.value) out.set(e.key.toString('latin1'), e.value);
  return out;
}

/** A main revision from etcd's 17-byte revision encoding (or an 8-byte number). */
function mainRevision(v: Buffer | undefined, name: string): number {
  if (v === undefined) return -1;
  if ((v.length !== 17 || v[8] !== 0x5f) && v.length !== 8)
    throw layout(`meta ${name} of ${v.length} bytes`);
  const n = readU64(v, 0);
  if (!Number.isSafeInteger(n)) throw layout(`meta ${name} beyond 2^53`);
  return n;
}

async function readMeta(reader: BoltReader, ref: BucketRef) {
  const m = await values(reader, ref);
  const scheduled = mainRevision(m.get('scheduledCompactRev'), 'scheduledCompactRev');
  const finished = mainRevision(m.get('finishedCompactRev'), 'finishedCompactRev');
  return { scheduled: Math.max(scheduled, finished), finished };
}

interface DecodedKv {
  key: Buffer;
  create_revision?: unknown;
  mod_revision?: unknown;
  version?: unknown;
  value?: Uint8Array;
  lease?: unknown;
}

function safe(v: unknown, what: string, at: string): number {
  const n = int64ToNumber(v ?? 0);
  if (!Number.isSafeInteger(n) || n < 0) throw layout(`${what} ${String(v)} at ${at}`);
  return n;
}

async function restoreKeys(
  reader: BoltReader,
  ref: BucketRef,
  store: ReturnType<typeof storeDb>,
  compact: number,
): Promise<{ revision: number; records: number }> {
  const type = etcdProto().type('mvccpb.KeyValue');
  /** Each live key's modRevision (for change records' prevMod). */
  const live = new Map<string, number>();
  let ops: BatchOp[] = [];
  let revision = 0;
  let records = 0;
  for await (const e of reader.entries(ref) as AsyncIterable<BoltEntry>) {
    if (e.value === undefined) throw layout('a nested bucket inside the key bucket');
    const k = e.key;
    const tomb = k.length === 18 && k[17] === 0x74;
    if ((k.length !== 17 && !tomb) || k[8] !== 0x5f)
      throw layout(`a key-bucket key of ${k.length} bytes (${k.toString('hex')})`);
    const main = readU64(k, 0);
    const sub = readU64(k, 9);
    const at = `revision ${main}_${sub}`;
    if (!Number.isSafeInteger(main) || !Number.isSafeInteger(sub) || main < 1)
      throw layout(`revision out of range at ${k.toString('hex')}`);
    let pb: DecodedKv;
    try {
      pb = type.decode(e.value) as unknown as DecodedKv;
    } catch (cause) {
      throw new EtceteraError(
        'ERR_SNAPSHOT_LAYOUT',
        { detail: `mvccpb.KeyValue at ${at}` },
        { cause },
      );
    }
    const key = new Uint8Array(pb.key ?? []);
    if (key.length === 0) throw layout(`an empty key at ${at}`);
    const name = bytesToLatin1(key);
    const prevMod = live.get(name) ?? 0;
    let record: Uint8Array | undefined;
    if (tomb) {
      live.delete(name);
      ops.push({ type: 'del', sublevel: store.kv, key });
    } else {
      const kv = {
        key,
        createRevision: safe(pb.create_revision, 'create_revision', at) as Revision,
        modRevision: safe(pb.mod_revision, 'mod_revision', at) as Revision,
        version: safe(pb.version, 'version', at),
        lease: leaseIdOf(pb.lease, at) as LeaseId,
        value: new Uint8Array(pb.value ?? []),
      } satisfies KeyValue;
      if (kv.modRevision !== main) throw layout(`mod_revision ${kv.modRevision} at ${at}`);
      record = encodeKv(kv);
      live.set(name, main);
      ops.push({ type: 'put', sublevel: store.kv, key, value: record });
    }
    ops.push({
      type: 'put',
      sublevel: store.hist,
      key: encodeHistKey(key, main),
      value: record ?? TOMBSTONE,
    });
    // Change records exist from the compaction revision on (src/store/compactor.ts).
    if (main >= compact) {
      ops.push({
        type: 'put',
        sublevel: store.rev,
        key: encodeRevKey(main, sub),
        value: encodeChange(
          record === undefined
            ? { type: 'DELETE', prevMod, key }
            : { type: 'PUT', prevMod, key, record },
        ),
      });
    }
    revision = Math.max(revision, main);
    records++;
    if (ops.length >= BATCH) {
      await store.write(ops, false);
      ops = [];
    }
  }
  if (ops.length > 0) await store.write(ops, false);
  return { revision, records };
}

const MASK53 = (1n << 53n) - 1n;

/** etcetera's ID for an etcd lease ID (see above). */
function leaseIdOf(v: unknown, at: string): number {
  const id = BigInt(uint64ToString(v ?? 0));
  if (id < 0n) throw layout(`lease ${id} at ${at}`);
  if (id <= MASK53) return Number(id);
  return Number(id & MASK53) || 1;
}

async function restoreLeases(
  reader: BoltReader,
  ref: BucketRef | undefined,
  store: ReturnType<typeof storeDb>,
): Promise<{ count: number; remapped: number }> {
  if (ref === undefined) return { count: 0, remapped: 0 };
  const type = etcdProto().type('leasepb.Lease');
  const used = new Map<number, string>();
  let ops: BatchOp[] = [];
  let count = 0;
  let remapped = 0;
  for await (const e of reader.entries(ref)) {
    if (e.value === undefined) throw layout('a nested bucket inside the lease bucket');
    let lease: { ID?: unknown; TTL?: unknown };
    try {
      lease = type.decode(e.value) as unknown as { ID?: unknown; TTL?: unknown };
    } catch (cause) {
      throw new EtceteraError('ERR_SNAPSHOT_LAYOUT', { detail: 'leasepb.Lease' }, { cause });
    }
    const original = uint64ToString(lease.ID ?? 0);
    const at = `lease ${original}`;
    const id = leaseIdOf(lease.ID, at);
    const ttl = safe(lease.TTL, 'lease TTL', at);
    if (original === '0') throw layout('lease ID 0');
    const clash = used.get(id);
    if (clash !== undefined)
      throw layout(`leases ${clash} and ${original} both map to ID ${id} (below 2^53)`);
    used.set(id, original);
    if (String(id) !== original) remapped++;
    ops.push({ type: 'put', sublevel: store.lease, key: u64(id), value: u64(ttl) });
    count++;
    if (ops.length >= BATCH) {
      await store.write(ops, false);
      ops = [];
    }
  }
  if (ops.length > 0) await store.write(ops, false);
  return { count, remapped };
}
