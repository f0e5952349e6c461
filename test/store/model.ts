/**
 * A reference model of the store's semantics (etcd v3, as etcd 3.4 behaves), for the
 * property and bad-input tests. It is written from the semantics, not from src/store: two
 * independent implementations that must agree on every response, error code and event.
 *
 * It is meant to be obviously correct, not fast:
 *   - `versions` keeps, per key, every change ever made (a put's full KeyValue or a
 *     tombstone) in the order they happened. Nothing is ever dropped, compaction included:
 *     compaction only moves the floor below which reads fail.
 *   - the state at revision R is, per key, the last change with modRevision <= R; the state
 *     "now" (inside a txn, with its own writes) is simply the last change.
 *   - `batches` is every event batch ever produced, one per revision that changed something.
 *
 * Where etcd 3.4 was asked (see test/store/semantics.test.ts), the answer is written beside
 * the rule as "etcd:".
 */
import type {
  Command,
  Compare,
  DeleteRangeRequest,
  DeleteRangeResult,
  Event,
  EventBatch,
  KeyValue,
  LeaseId,
  PutRequest,
  PutResult,
  RangeRequest,
  RangeResult,
  RequestOp,
  ResponseOp,
  Revision,
  TxnRequest,
  TxnResult,
} from '../../src/store/types.js';
import { checkRequest, ModelError } from './model-check.js';

export { ModelError };

export type Outcome<T> = { ok: true; result: T } | { ok: false; code: string };

type Change = { kind: 'put'; kv: KeyValue } | { kind: 'del'; rev: number };

interface ModelLease {
  ttl: number;
  keys: Set<string>;
}

/** One write in progress: the revision it will take and the events it produced so far. */
interface Write {
  readonly rev: number;
  readonly events: Event[];
}

export interface ModelOptions {
  minLeaseTtl?: number;
  maxTxnOps?: number;
  maxRequestBytes?: number;
}

const EMPTY = new Uint8Array(0);
const MAX_LEASE_TTL = 9_000_000_000;

export const str = (b: Uint8Array): string => Buffer.from(b).toString('latin1');
export const bytes = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'latin1'));

/** etcd's reading of (key, range_end): one key, every key >= key ("\0"), or [key, end). */
export function inRange(key: string, start: Uint8Array, end: Uint8Array | undefined): boolean {
  const s = str(start);
  if (end === undefined || end.length === 0) return key === s;
  if (end.length === 1 && end[0] === 0) return key >= s;
  return key >= s && key < str(end);
}

export class Model {
  revision = 1;
  /** -1 until the first compaction, as etcd's compactMainRev. */
  compacted = -1;
  readonly batches: EventBatch[] = [];
  private readonly versions = new Map<string, Change[]>();
  private readonly leaseMap = new Map<number, ModelLease>();
  private readonly minLeaseTtl: number;
  private readonly limits: { maxTxnOps: number; maxRequestBytes: number };

  constructor(options: ModelOptions = {}) {
    this.minLeaseTtl = options.minLeaseTtl ?? 1;
    this.limits = {
      maxTxnOps: options.maxTxnOps ?? 128,
      maxRequestBytes: options.maxRequestBytes ?? 1.5 * 1024 * 1024,
    };
  }

  get compactRevision(): number {
    return Math.max(0, this.compacted);
  }

  // --- reading the history --------------------------------------------------------------

  /** The key's version at revision `rev` (Infinity: now, including a txn's own writes). */
  private at(key: string, rev: number): KeyValue | undefined {
    const changes = this.versions.get(key) ?? [];
    let found: Change | undefined;
    for (const c of changes) {
      const mod = c.kind === 'put' ? c.kv.modRevision : c.rev;
      if (mod <= rev) found = c;
    }
    return found?.kind === 'put' ? found.kv : undefined;
  }

  /** Live key-values in the interval at `rev`, in key (byte) order. */
  private liveAt(start: Uint8Array, end: Uint8Array | undefined, rev: number): KeyValue[] {
    const keys = [...this.versions.keys()].filter((k) => inRange(k, start, end)).sort();
    const out: KeyValue[] = [];
    for (const k of keys) {
      const kv = this.at(k, rev);
      if (kv) out.push(kv);
    }
    return out;
  }

  // --- range ----------------------------------------------------------------------------

  /** A range outside a txn (etcd Range). */
  range(r: RangeRequest): Outcome<RangeResult> {
    return attempt(() => {
      checkRequest({ op: 'range', request: r }, this.limits);
      const rev = r.revision ?? 0;
      if (rev > this.revision) throw new ModelError('ERR_FUTURE_REV');
      // etcd: reading at the compacted revision itself works; strictly below fails.
      if (rev > 0 && rev < this.compacted) throw new ModelError('ERR_COMPACTED');
      return this.read(r, rev > 0 ? rev : this.revision, this.revision);
    });
  }

  /** Reads at `rev` and reports `reported` as the response revision. */
  private read(r: RangeRequest, rev: number, reported: number): RangeResult {
    const found = this.liveAt(r.key, r.rangeEnd, rev);
    // etcd: count is the number of keys in the range, before the min/max filters.
    const count = found.length;
    if (r.countOnly) return { revision: reported as Revision, kvs: [], more: false, count };
    let kvs = found.filter(
      (kv) =>
        // etcd: a filter is on when its field is non-zero (negative values included).
        !(r.minModRevision && kv.modRevision < r.minModRevision) &&
        !(r.maxModRevision && kv.modRevision > r.maxModRevision) &&
        !(r.minCreateRevision && kv.createRevision < r.minCreateRevision) &&
        !(r.maxCreateRevision && kv.createRevision > r.maxCreateRevision),
    );
    kvs = sortKvs(kvs, r);
    let more = false;
    const limit = r.limit ?? 0;
    if (limit > 0 && kvs.length > limit) {
      kvs = kvs.slice(0, limit);
      more = true;
    }
    if (r.keysOnly) kvs = kvs.map((kv) => ({ ...kv, value: EMPTY }));
    return { revision: reported as Revision, kvs, more, count };
  }

  // --- commands -------------------------------------------------------------------------

  /** Submits one command (limits checked, as before proposing); a failed command changes nothing. */
  apply(c: Command): Outcome<unknown> {
    return this.applyUnder(c, this.limits);
  }

  /** Applies one committed entry: its proposer checked the limits, so only the rest is checked. */
  applyCommitted(c: Command): Outcome<unknown> {
    return this.applyUnder(c, {
      maxTxnOps: Number.POSITIVE_INFINITY,
      maxRequestBytes: Number.POSITIVE_INFINITY,
    });
  }

  private applyUnder(
    c: Command,
    limits: { maxTxnOps: number; maxRequestBytes: number },
  ): Outcome<unknown> {
    return attempt(() => {
      checkRequest({ op: 'command', command: c }, limits);
      switch (c.op) {
        case 'put':
          return { op: 'put', result: this.applyPut(c) };
        case 'deleteRange':
          return { op: 'deleteRange', result: this.write((w) => this.del(w, c)) };
        case 'txn':
          return { op: 'txn', result: this.applyTxn(c) };
        case 'compact':
          return { op: 'compact', result: this.compact(c.revision) };
        case 'leaseGrant':
          return { op: 'leaseGrant', result: this.leaseGrant(c.id, c.ttl) };
        case 'leaseRevoke':
          return { op: 'leaseRevoke', result: this.leaseRevoke(c.id) };
        case 'noop':
          return { op: 'noop', result: { revision: this.revision } };
      }
    });
  }

  /** Runs `body` as one write: one new revision and one event batch if it changed anything. */
  private write<T>(body: (w: Write) => T): T {
    const w: Write = { rev: this.revision + 1, events: [] };
    const result = body(w);
    if (w.events.length > 0) {
      this.revision = w.rev;
      this.batches.push({ revision: w.rev as Revision, events: w.events });
    }
    return result;
  }

  private applyPut(p: PutRequest): PutResult {
    // etcd (plain put): an unknown lease is reported before a missing key.
    this.checkLease(p.lease);
    this.checkPutKey(p);
    return this.write((w) => this.put(w, p));
  }

  private checkLease(lease: number | undefined): void {
    if (lease && !this.leaseMap.has(lease)) throw new ModelError('ERR_LEASE_NOT_FOUND');
  }

  /** ignore_value / ignore_lease need the key to exist (checked before the write starts). */
  private checkPutKey(p: PutRequest): void {
    if ((p.ignoreValue || p.ignoreLease) && !this.at(str(p.key), this.revision)) {
      throw new ModelError('ERR_KEY_NOT_FOUND');
    }
  }

  private put(w: Write, p: PutRequest): PutResult {
    const key = str(p.key);
    const prev = this.at(key, Number.POSITIVE_INFINITY);
    const lease = (p.ignoreLease ? (prev?.lease ?? 0) : (p.lease ?? 0)) as LeaseId;
    const kv: KeyValue = {
      key: bytes(key),
      createRevision: (prev ? prev.createRevision : w.rev) as Revision,
      modRevision: w.rev as Revision,
      version: prev ? prev.version + 1 : 1,
      value: p.ignoreValue ? (prev?.value ?? EMPTY) : p.value,
      lease,
    };
    if (prev?.lease) this.leaseMap.get(prev.lease)?.keys.delete(key);
    if (lease) this.leaseMap.get(lease)?.keys.add(key);
    this.record(w, key, { kind: 'put', kv });
    const result: PutResult = { revision: w.rev as Revision };
    if (p.prevKv && prev) result.prevKv = prev;
    return result;
  }

  private del(w: Write, d: DeleteRangeRequest): DeleteRangeResult {
    const gone = this.liveAt(d.key, d.rangeEnd, Number.POSITIVE_INFINITY);
    for (const kv of gone) {
      const key = str(kv.key);
      if (kv.lease) this.leaseMap.get(kv.lease)?.keys.delete(key);
      this.record(w, key, { kind: 'del', rev: w.rev });
    }
    return {
      // etcd: a delete reports the txn's new revision once anything in it changed.
      revision: (w.events.length > 0 ? w.rev : w.rev - 1) as Revision,
      deleted: gone.length,
      prevKvs: d.prevKv ? gone : [],
    };
  }

  /** Appends a change and its event; prevKv is the key as it was before this revision. */
  private record(w: Write, key: string, change: Change): void {
    const list = this.versions.get(key) ?? [];
    list.push(change);
    this.versions.set(key, list);
    const prevKv = this.at(key, w.rev - 1);
    const kv: KeyValue =
      change.kind === 'put'
        ? change.kv
        : {
            key: bytes(key),
            createRevision: 0 as Revision,
            modRevision: w.rev as Revision,
            version: 0,
            value: EMPTY,
            lease: 0 as LeaseId,
          };
    const type = change.kind === 'put' ? 'PUT' : 'DELETE';
    w.events.push(prevKv ? { type, kv, prevKv } : { type, kv });
  }

  // --- txn ------------------------------------------------------------------------------

  private applyTxn(t: TxnRequest): TxnResult {
    // 1. The path: every compare on it is judged against the state before the txn.
    const taken: RequestOp[] = [];
    const choose = (r: TxnRequest): void => {
      const ops = r.compare.every((c) => this.compare(c)) ? r.success : r.failure;
      for (const op of ops) {
        if (op.type === 'txn') choose(op.request);
        else taken.push(op);
      }
    };
    choose(t);
    // 2. State checks on the taken path, before any write. etcd: all puts first, then all
    //    ranges (whatever their order in the request).
    for (const op of taken) {
      if (op.type === 'put') {
        this.checkPutKey(op.request);
        this.checkLease(op.request.lease);
      }
    }
    for (const op of taken) {
      if (op.type !== 'range') continue;
      const rev = op.request.revision ?? 0;
      // etcd: inside a txn, any non-zero revision is checked, negatives included, against
      // the compaction floor (-1 before the first compaction).
      if (rev === 0) continue;
      if (rev > this.revision) throw new ModelError('ERR_FUTURE_REV');
      if (rev < this.compacted) throw new ModelError('ERR_COMPACTED');
    }
    // 3. The writes, in order, each visible to the ops after it. Compares are re-evaluated
    //    against the unchanged state before the txn (it is kept at revision - 1 < w.rev).
    const before = this.revision;
    return this.write((w) => {
      const run = (r: TxnRequest, top: boolean): TxnResult => {
        const succeeded = r.compare.every((c) => this.compare(c, before));
        const responses: ResponseOp[] = [];
        for (const op of succeeded ? r.success : r.failure) {
          responses.push(this.txnOp(w, op, run));
        }
        const changed = w.events.length > 0;
        // etcd: only the outer response carries a revision; a nested txn's header is empty.
        const revision = (top ? (changed ? w.rev : before) : 0) as Revision;
        return { revision, succeeded, responses };
      };
      return run(t, true);
    });
  }

  private txnOp(
    w: Write,
    op: RequestOp,
    run: (r: TxnRequest, top: boolean) => TxnResult,
  ): ResponseOp {
    const now = () => (w.events.length > 0 ? w.rev : w.rev - 1);
    switch (op.type) {
      case 'range': {
        const rev = op.request.revision ?? 0;
        // etcd: the response carries the txn's revision so far, even for a past revision.
        const result =
          rev > 0
            ? this.read(op.request, rev, now())
            : this.read(op.request, Number.POSITIVE_INFINITY, now());
        return { type: 'range', response: result };
      }
      case 'put':
        return { type: 'put', response: this.put(w, op.request) };
      case 'deleteRange':
        return { type: 'deleteRange', response: this.del(w, op.request) };
      case 'txn':
        return { type: 'txn', response: run(op.request, false) };
    }
  }

  /** etcd's compare: every key in range must pass; no key compares as zeros, VALUE fails. */
  private compare(c: Compare, rev = this.revision): boolean {
    const kvs = this.liveAt(c.key, c.rangeEnd, rev);
    if (kvs.length === 0) return c.target === 'VALUE' ? false : this.compareOne(c, undefined);
    return kvs.every((kv) => this.compareOne(c, kv));
  }

  private compareOne(c: Compare, kv: KeyValue | undefined): boolean {
    let d: number;
    switch (c.target) {
      case 'VALUE':
        d = Buffer.compare(Buffer.from(kv?.value ?? EMPTY), Buffer.from(c.value));
        break;
      case 'VERSION':
        d = (kv?.version ?? 0) - c.version;
        break;
      case 'CREATE':
        d = (kv?.createRevision ?? 0) - c.createRevision;
        break;
      case 'MOD':
        d = (kv?.modRevision ?? 0) - c.modRevision;
        break;
      case 'LEASE':
        d = (kv?.lease ?? 0) - c.lease;
        break;
    }
    if (c.result === 'EQUAL') return d === 0;
    if (c.result === 'NOT_EQUAL') return d !== 0;
    if (c.result === 'GREATER') return d > 0;
    return d < 0;
  }

  // --- compaction and leases ------------------------------------------------------------

  private compact(rev: number): { revision: Revision } {
    if (rev <= this.compacted) throw new ModelError('ERR_COMPACTED');
    if (rev > this.revision) throw new ModelError('ERR_FUTURE_REV');
    this.compacted = rev;
    return { revision: this.revision as Revision };
  }

  private leaseGrant(id: number, ttl: number) {
    if (ttl > MAX_LEASE_TTL) throw new ModelError('ERR_LEASE_TTL_TOO_LARGE');
    if (this.leaseMap.has(id)) throw new ModelError('ERR_LEASE_EXIST');
    const granted = Math.max(ttl, this.minLeaseTtl);
    this.leaseMap.set(id, { ttl: granted, keys: new Set() });
    return { revision: this.revision as Revision, id: id as LeaseId, ttl: granted };
  }

  private leaseRevoke(id: number): { revision: Revision } {
    const lease = this.leaseMap.get(id);
    if (!lease) throw new ModelError('ERR_LEASE_NOT_FOUND');
    const keys = [...lease.keys].sort();
    this.leaseMap.delete(id);
    // etcd: the attached keys go in key order, all in one revision.
    this.write((w) => {
      for (const k of keys) this.del(w, { key: bytes(k) });
    });
    return { revision: this.revision as Revision };
  }

  /** Lease IDs in ascending order, with granted TTL and attached keys (sorted). */
  leases(): Array<{ id: number; ttl: number; keys: string[] }> {
    return [...this.leaseMap.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([id, l]) => ({ id, ttl: l.ttl, keys: [...l.keys].sort() }));
  }

  leaseIds(): number[] {
    return [...this.leaseMap.keys()].sort((a, b) => a - b);
  }
}

/**
 * etcd's sort: a target other than KEY with order NONE means ASCEND. etcd sorts with Go's
 * sort.Sort, which for the handful of keys in these tests is an insertion sort: stable, so
 * ties stay in key order, for DESCEND too (checked against etcd 3.4).
 */
function sortKvs(kvs: KeyValue[], r: RangeRequest): KeyValue[] {
  const target = r.sortTarget ?? 'KEY';
  let order = r.sortOrder ?? 'NONE';
  if (target !== 'KEY' && order === 'NONE') order = 'ASCEND';
  if (order === 'NONE') return kvs;
  const field = (kv: KeyValue): number | Buffer => {
    if (target === 'KEY') return Buffer.from(kv.key);
    if (target === 'VALUE') return Buffer.from(kv.value);
    if (target === 'VERSION') return kv.version;
    if (target === 'CREATE') return kv.createRevision;
    return kv.modRevision;
  };
  const cmp = (a: KeyValue, b: KeyValue): number => {
    const x = field(a);
    const y = field(b);
    return typeof x === 'number' ? x - (y as number) : Buffer.compare(x, y as Buffer);
  };
  const sign = order === 'DESCEND' ? -1 : 1;
  return [...kvs].sort((a, b) => sign * cmp(a, b));
}

function attempt<T>(body: () => T): Outcome<T> {
  try {
    return { ok: true, result: body() };
  } catch (e) {
    if (e instanceof ModelError) return { ok: false, code: e.code };
    throw e;
  }
}
