/**
 * Reads from a LevelDB snapshot: ranges at the current or a past revision, streamed in
 * chunks, and the change history of a key range for watch replay.
 *
 * A read never touches the in-memory key index (that belongs to apply, which may be ahead of
 * what is durable). Instead it takes a LevelDB snapshot and reads the current revision from
 * the snapshot's own meta record, so the data and the revision it reports always agree, and
 * writes keep going while a long read streams.
 */
import { EtceteraError } from '../errors.js';
import type { Snapshot, StoreDb, Sub } from './db.js';
import {
  decodeChange,
  decodeHistKey,
  decodeKv,
  decodeRevKey,
  encodeHistKey,
  encodeRevKey,
  escapeBound,
  escapeKey,
  histKeyPrefix,
  readU64,
} from './encoding.js';
import { type Interval, intervalContains, toInterval } from './interval.js';
import { rangeShape, shapeKvs } from './range-shape.js';
import type {
  Event,
  EventBatch,
  KeyRange,
  KeyValue,
  RangeRequest,
  RangeResult,
  Revision,
} from './types.js';

/** Entries read from LevelDB per iterator step: bounds memory and lets writes interleave. */
export const READ_CHUNK = 1000;

export const META_REVISION = Buffer.from('revision');
export const META_COMPACT = Buffer.from('compact');
export const META_COMPACT_DONE = Buffer.from('compactDone');
export const META_APPLIED = Buffer.from('applied');

/** A meta number, or `absent` when it was never written. */
export async function readMetaNumber(
  meta: Sub,
  name: Uint8Array,
  snapshot?: Snapshot,
  absent = 0,
): Promise<number> {
  const v = await meta.get(name, snapshot ? { snapshot } : {});
  return v === undefined ? absent : readU64(v, 0);
}

function liveBounds(iv: Interval): { gte: Uint8Array; lt?: Uint8Array; lte?: Uint8Array } {
  if (iv.kind === 'single') return { gte: iv.key, lte: iv.key };
  return iv.end ? { gte: iv.start, lt: iv.end } : { gte: iv.start };
}

function histBounds(iv: Interval): { gte: Uint8Array; lt?: Uint8Array } {
  if (iv.kind === 'single') {
    const gte = escapeKey(iv.key);
    const lt = Uint8Array.from(gte);
    lt[lt.length - 1] = 2;
    return { gte, lt };
  }
  return iv.end
    ? { gte: escapeBound(iv.start), lt: escapeBound(iv.end) }
    : { gte: escapeBound(iv.start) };
}

/** Live key-values of an interval at the snapshot's current revision, in chunks. */
async function* liveChunks(
  kv: Sub,
  iv: Interval,
  snapshot: Snapshot,
  reverse: boolean,
): AsyncGenerator<KeyValue[]> {
  const it = kv.iterator({ ...liveBounds(iv), reverse, snapshot });
  try {
    for (;;) {
      const entries = await it.nextv(READ_CHUNK);
      if (entries.length === 0) return;
      yield entries.map(([k, v]) => decodeKv(Uint8Array.from(k), v));
    }
  } finally {
    await it.close();
  }
}

/** Key-values of an interval as they were at revision `rev`, in key order, in chunks. */
async function* historicalChunks(
  hist: Sub,
  iv: Interval,
  rev: number,
  snapshot: Snapshot,
): AsyncGenerator<KeyValue[]> {
  const it = hist.iterator({ ...histBounds(iv), snapshot });
  let group: Uint8Array | undefined;
  let best: { key: Uint8Array; value: Uint8Array } | undefined;
  let out: KeyValue[] = [];
  const flush = () => {
    if (best && best.value.length > 0) out.push(decodeKv(best.key, best.value));
    best = undefined;
  };
  try {
    for (;;) {
      const entries = await it.nextv(READ_CHUNK);
      if (entries.length === 0) break;
      for (const [k, v] of entries) {
        const prefix = histKeyPrefix(k);
        if (!group || Buffer.compare(group, prefix) !== 0) {
          flush();
          group = Uint8Array.from(prefix);
        }
        const { key, rev: at } = decodeHistKey(k);
        if (at <= rev) best = { key, value: v };
      }
      if (out.length >= READ_CHUNK) {
        yield out;
        out = [];
      }
    }
    flush();
    if (out.length > 0) yield out;
  } finally {
    await it.close();
  }
}

async function countLive(
  kv: Sub,
  iv: Interval,
  snapshot: Snapshot,
  after?: Uint8Array,
): Promise<number> {
  const { gte, ...upper } = liveBounds(iv);
  const it = kv.keys(after ? { ...upper, gt: after, snapshot } : { gte, ...upper, snapshot });
  let n = 0;
  try {
    for (;;) {
      const keys = await it.nextv(READ_CHUNK * 10);
      if (keys.length === 0) return n;
      n += keys.length;
    }
  } finally {
    await it.close();
  }
}

export interface ReadPoint {
  snapshot: Snapshot;
  currentRevision: Revision;
  compactRevision: Revision;
}

/** Checks the requested revision against the read point; returns the revision to read at. */
export function resolveRevision(requested: number | undefined, at: ReadPoint): Revision {
  const rev = requested ?? 0;
  if (rev > at.currentRevision) {
    throw new EtceteraError('ERR_FUTURE_REV', { currentRevision: at.currentRevision });
  }
  if (rev > 0 && rev < at.compactRevision) {
    throw new EtceteraError('ERR_COMPACTED', { compactRevision: at.compactRevision });
  }
  return (rev <= 0 ? at.currentRevision : rev) as Revision;
}

/** A range read at a read point (validated request). */
export async function rangeAt(db: StoreDb, r: RangeRequest, at: ReadPoint): Promise<RangeResult> {
  const rev = resolveRevision(r.revision, at);
  const iv = toInterval(r.key, r.rangeEnd);
  const current = rev === at.currentRevision;
  if (r.countOnly && current) {
    return {
      revision: at.currentRevision,
      kvs: [],
      more: false,
      count: await countLive(db.kv, iv, at.snapshot),
    };
  }
  const shape = rangeShape(r);
  const reverse = current && shape.reverseKeys;
  const chunks = current
    ? liveChunks(db.kv, iv, at.snapshot, reverse)
    : historicalChunks(db.hist, iv, rev, at.snapshot);
  const kvs: KeyValue[] = [];
  let count = 0;
  const keepAll = shape.needsAll || shape.limit === 0 || (!current && shape.reverseKeys);
  for await (const chunk of chunks) {
    for (const kv of chunk) {
      count++;
      if (!r.countOnly && (keepAll || kvs.length <= shape.limit)) kvs.push(kv);
    }
    if (current && !keepAll && kvs.length > shape.limit) {
      // Enough collected for limit and `more`; count the rest without reading values.
      const last = chunk[chunk.length - 1] as KeyValue;
      if (!reverse) {
        count += await countLive(db.kv, iv, at.snapshot, last.key);
        break;
      }
    }
  }
  if (r.countOnly) return { revision: at.currentRevision, kvs: [], more: false, count };
  if (!current && shape.reverseKeys) kvs.reverse();
  return { revision: at.currentRevision, count, ...shapeKvs(kvs, r, shape) };
}

/** Streams the key-values of a range in key order, in chunks, at a read point. */
export async function* rangeStreamAt(
  db: StoreDb,
  r: RangeRequest,
  at: ReadPoint,
): AsyncGenerator<KeyValue[]> {
  const rev = resolveRevision(r.revision, at);
  const iv = toInterval(r.key, r.rangeEnd);
  if (rev === at.currentRevision) yield* liveChunks(db.kv, iv, at.snapshot, false);
  else yield* historicalChunks(db.hist, iv, rev, at.snapshot);
}

/**
 * The changes of `range` at revisions [from, to], one batch per revision, prevKv filled in.
 * The caller checked `from` against the compacted revision at the read point.
 *
 * At the compacted revision itself, answers as etcd does whatever the progress of physical
 * compaction: a DELETE there is gone (its tombstone is compacted), and a PUT there has no
 * prevKv (the version before it is below the compacted revision).
 */
export async function* historyAt(
  db: StoreDb,
  from: number,
  to: number,
  range: KeyRange,
  snapshot: Snapshot,
  compactRevision: number,
): AsyncGenerator<EventBatch> {
  const iv = toInterval(range.key, range.rangeEnd);
  const it = db.rev.iterator({ gte: encodeRevKey(from, 0), lt: encodeRevKey(to + 1, 0), snapshot });
  let pending: { revision: Revision; events: Event[] } | undefined;
  try {
    for (;;) {
      const entries = await it.nextv(READ_CHUNK);
      if (entries.length === 0) break;
      const changes = entries
        .map(([k, v]) => ({ ...decodeRevKey(k), change: decodeChange(v) }))
        .filter((c) => intervalContains(iv, c.change.key))
        .filter((c) => c.main !== compactRevision || c.change.type === 'PUT');
      // Only the previous versions need hist: a PUT carries its own record.
      const prevs = await db.hist.getMany(
        changes.map((c) => encodeHistKey(c.change.key, c.change.prevMod)),
        { snapshot },
      );
      for (const [i, c] of changes.entries()) {
        const prev = c.change.prevMod > 0 && c.main !== compactRevision ? prevs[i] : undefined;
        const kv = c.change.record
          ? decodeKv(c.change.key, c.change.record)
          : deletedKv(c.change.key, c.main);
        const event: Event =
          prev && prev.length > 0
            ? { type: c.change.type, kv, prevKv: decodeKv(c.change.key, prev) }
            : { type: c.change.type, kv };
        if (pending && pending.revision !== c.main) {
          yield pending;
          pending = undefined;
        }
        pending ??= { revision: c.main, events: [] };
        pending.events.push(event);
      }
    }
    if (pending) yield pending;
  } finally {
    await it.close();
  }
}

export function deletedKv(key: Uint8Array, rev: Revision): KeyValue {
  return {
    key,
    createRevision: 0 as Revision,
    modRevision: rev,
    version: 0,
    value: new Uint8Array(0),
    lease: 0 as KeyValue['lease'],
  };
}
