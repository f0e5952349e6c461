/**
 * Apply: one command at a time, deterministically, against the key index, the lessor and
 * the batch overlay. The store (store.ts) decides when the gathered LevelDB operations are
 * written; the applier never writes on its own.
 *
 * Order of work for every write command, as etcd does it:
 *   1. request checks (validate.ts) — a failure changes nothing;
 *   2. state checks against the state before the command (txn compares choose the path;
 *      ignore_value/ignore_lease need the key; leases must exist; range revisions must be
 *      readable) — a failure changes nothing;
 *   3. the changes, in request order, each visible to the reads after it.
 */
import { EtceteraError } from '../errors.js';
import { type AlarmSet, META_ALARMS } from './alarms.js';
import { type AuthStore, commandNeeds, META_AUTH } from './auth.js';
import type { Snapshot } from './db.js';
import { u64 } from './encoding.js';
import { intervalStrings, toInterval } from './interval.js';
import { MAX_LEASE_TTL } from './lessor.js';
import { rangeShape, shapeKvs } from './range-shape.js';
import { rangeAt } from './reader.js';
import type {
  Alarm,
  Command,
  CommandResult,
  Compare,
  DeleteRangeRequest,
  DeleteRangeResult,
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
} from './types.js';
import { type ApplyState, readValues, toKv, WriteTxn } from './write-txn.js';

export interface CommandApplierState extends ApplyState {
  revision: Revision;
  /** -1 until the first compaction. */
  compactRevision: number;
  /** The raised alarms (alarms.ts): apply refuses writes under them. */
  readonly alarms: AlarmSet;
  /** Users, roles and the enabled flag (auth.ts): apply checks stamped writes against them. */
  readonly auth: AuthStore;
}

/**
 * A snapshot of LevelDB holding exactly the state before the current command. The store
 * guarantees it by writing what is pending before it applies a command that reads a past
 * revision (see `readsPast`).
 */
export type SnapshotForRead = () => Snapshot;

/** Whether a command reads a past revision (so LevelDB must hold the state before it). */
export function readsPast(c: Command): boolean {
  const visit = (ops: RequestOp[]): boolean =>
    ops.some((op) =>
      op.type === 'range'
        ? (op.request.revision ?? 0) > 0
        : op.type === 'txn' && (visit(op.request.success) || visit(op.request.failure)),
    );
  return c.op === 'txn' && (visit(c.success) || visit(c.failure));
}

export class CommandApplier {
  constructor(
    private readonly s: CommandApplierState,
    private readonly snapshotForRead: SnapshotForRead,
  ) {}

  /** Applies a checked command. Throws EtceteraError for state-dependent failures (nothing changed). */
  async apply(c: Command, nowMs: number): Promise<{ result: CommandResult; txn?: WriteTxn }> {
    const refusal = this.s.alarms.refusal(c);
    if (refusal !== undefined) throw new EtceteraError(refusal);
    const denied = this.authRefusal(c);
    if (denied !== undefined) throw new EtceteraError(denied);
    switch (c.op) {
      case 'put': {
        const txn = this.begin();
        // etcd checks a plain put's lease before its key (inside a txn, the key first).
        if (c.lease && !this.s.lessor.has(c.lease)) throw new EtceteraError('ERR_LEASE_NOT_FOUND');
        await this.checkPut(c);
        return { result: { op: 'put', result: await this.put(txn, c) }, txn };
      }
      case 'deleteRange': {
        const txn = this.begin();
        return { result: { op: 'deleteRange', result: await this.deleteRange(txn, c) }, txn };
      }
      case 'txn': {
        const txn = this.begin();
        const result = await this.txn(txn, c);
        return { result: { op: 'txn', result }, txn };
      }
      case 'compact':
        return { result: { op: 'compact', result: this.compact(c.revision) } };
      case 'leaseGrant':
        return { result: { op: 'leaseGrant', result: this.leaseGrant(c.id, c.ttl, nowMs) } };
      case 'leaseRevoke': {
        const txn = this.begin();
        await this.leaseRevoke(txn, c.id);
        return { result: { op: 'leaseRevoke', result: { revision: txn.revision } }, txn };
      }
      case 'alarm':
        return { result: { op: 'alarm', result: this.alarm(c) } };
      case 'auth': {
        this.s.auth.apply(c.request);
        if (c.request.type !== 'authenticate') {
          const value = this.s.auth.encode();
          this.s.ops.push({ type: 'put', sublevel: this.s.db.meta, key: META_AUTH, value });
        }
        const result = { revision: this.s.revision, authRevision: this.s.auth.revision };
        return { result: { op: 'auth', result } };
      }
      case 'noop':
        return { result: { op: 'noop', result: { revision: this.s.revision } } };
    }
  }

  /**
   * etcd's auth applier: while auth is enabled, a stamped client write is checked again
   * against the auth state as applied (the member checked it before proposing, but users,
   * roles or the enabled flag may have changed since). Unstamped commands are the member's own.
   */
  private authRefusal(c: Command) {
    if (!this.s.auth.enabled) return undefined;
    if (c.op !== 'put' && c.op !== 'deleteRange' && c.op !== 'txn' && c.op !== 'leaseRevoke')
      return undefined;
    if (c.auth === undefined) return undefined;
    const needs = commandNeeds(c, (id) => this.leaseKeys(id)) ?? [];
    return this.s.auth.needsRefusal(c.auth, needs);
  }

  private leaseKeys(id: number): Uint8Array[] {
    const lease = this.s.lessor.get(id);
    return lease === undefined
      ? []
      : [...lease.keys].map((k) => new Uint8Array(Buffer.from(k, 'latin1')));
  }

  private alarm(c: Extract<Command, { op: 'alarm' }>): { revision: Revision; alarms: Alarm[] } {
    const a = { memberId: c.memberId, alarm: c.alarm };
    const changed =
      c.action === 'activate' ? this.s.alarms.activate(a) : this.s.alarms.deactivate(a);
    const value = this.s.alarms.encode();
    this.s.ops.push({ type: 'put', sublevel: this.s.db.meta, key: META_ALARMS, value });
    return { revision: this.s.revision, alarms: changed === undefined ? [] : [changed] };
  }

  private begin(): WriteTxn {
    return new WriteTxn(this.s, this.s.revision);
  }

  // --- put / delete ---------------------------------------------------------------------

  private async checkPut(r: PutRequest): Promise<void> {
    if ((r.ignoreValue || r.ignoreLease) && !this.s.index.get(keyStr(r.key))) {
      throw new EtceteraError('ERR_KEY_NOT_FOUND');
    }
    const lease = r.lease ?? 0;
    if (lease !== 0 && !this.s.lessor.has(lease)) throw new EtceteraError('ERR_LEASE_NOT_FOUND');
  }

  private async put(txn: WriteTxn, r: PutRequest): Promise<PutResult> {
    const key = keyStr(r.key);
    const prevMeta = this.s.index.get(key);
    const needPrevValue = prevMeta !== undefined;
    const prevValue = needPrevValue ? (await readValues(this.s, [key])).get(key) : undefined;
    const value = r.ignoreValue ? (prevValue ?? new Uint8Array(0)) : r.value;
    const lease = (r.ignoreLease ? (prevMeta?.lease ?? 0) : (r.lease ?? 0)) as LeaseId;
    const prevKv = txn.put(key, value, lease, prevValue);
    return r.prevKv && prevKv ? { revision: txn.revision, prevKv } : { revision: txn.revision };
  }

  private async deleteRange(txn: WriteTxn, r: DeleteRangeRequest): Promise<DeleteRangeResult> {
    const keys = this.keysIn(r.key, r.rangeEnd);
    const values = await readValues(this.s, keys);
    const prevKvs: KeyValue[] = [];
    for (const k of keys) prevKvs.push(txn.delete(k, values.get(k)));
    return { revision: txn.revision, deleted: keys.length, prevKvs: r.prevKv ? prevKvs : [] };
  }

  private keysIn(key: Uint8Array, rangeEnd: Uint8Array | undefined): string[] {
    const iv = intervalStrings(toInterval(key, rangeEnd));
    if (iv.single) return this.s.index.get(iv.start) ? [iv.start] : [];
    return this.s.index.keysInRange(iv.start, iv.end);
  }

  // --- ranges inside a txn ------------------------------------------------------------------

  private async range(txn: WriteTxn, r: RangeRequest): Promise<RangeResult> {
    if (r.revision && r.revision > 0) {
      // A past revision: LevelDB must hold everything before this command; the checks made
      // sure the revision is readable, and this txn's own writes are newer than it.
      const snapshot = this.snapshotForRead();
      try {
        const at = {
          snapshot,
          currentRevision: txn.beginRev,
          compactRevision: this.s.compactRevision as Revision,
        };
        return { ...(await rangeAt(this.s.db, r, at)), revision: txn.revision };
      } finally {
        await snapshot.close();
      }
    }
    const keys = this.keysIn(r.key, r.rangeEnd);
    if (r.countOnly) return { revision: txn.revision, kvs: [], more: false, count: keys.length };
    const shape = rangeShape(r);
    let wanted = shape.needsAll || shape.limit === 0 ? keys : keys.slice(0, shape.limit + 1);
    if (shape.reverseKeys)
      wanted = shape.limit === 0 ? [...keys].reverse() : keys.slice(-(shape.limit + 1)).reverse();
    // keys_only drops values after sorting: a sort by value still needs them.
    const skipValues = r.keysOnly && shape.target !== 'VALUE';
    const values = skipValues ? new Map<string, Uint8Array>() : await readValues(this.s, wanted);
    const kvs = wanted.map((k) => toKv(k, this.s.index.get(k)!, values.get(k)));
    return { revision: txn.revision, count: keys.length, ...shapeKvs(kvs, r, shape) };
  }

  // --- txn ----------------------------------------------------------------------------------

  private async txn(txn: WriteTxn, r: TxnRequest): Promise<TxnResult> {
    // Every compare on the taken path is judged against the state before the txn.
    const path = await this.comparePath(r);
    // etcd checks the puts of the whole path first, then its ranges.
    await this.checkPath(r, path, 0, 'put');
    await this.checkPath(r, path, 0, 'range');
    const { result } = await this.execute(txn, r, path, 0);
    return { ...result, revision: txn.revision };
  }

  private async comparePath(r: TxnRequest): Promise<boolean[]> {
    const ok = await this.compareAll(r.compare);
    const path = [ok];
    for (const op of ok ? r.success : r.failure) {
      if (op.type === 'txn') path.push(...(await this.comparePath(op.request)));
    }
    return path;
  }

  private async compareAll(compares: Compare[]): Promise<boolean> {
    for (const c of compares) if (!(await this.compareOne(c))) return false;
    return true;
  }

  private async compareOne(c: Compare): Promise<boolean> {
    const keys = this.keysIn(c.key, c.rangeEnd);
    if (keys.length === 0) return c.target === 'VALUE' ? false : compareResult(c, undefined);
    const values = c.target === 'VALUE' ? await readValues(this.s, keys) : undefined;
    return keys.every((k) => compareResult(c, toKv(k, this.s.index.get(k)!, values?.get(k))));
  }

  /** State checks on the taken path; returns how many path slots the subtree used. */
  private async checkPath(
    r: TxnRequest,
    path: boolean[],
    at: number,
    kind: 'put' | 'range',
  ): Promise<number> {
    let used = 1;
    for (const op of path[at] ? r.success : r.failure) {
      if (op.type === 'put' && kind === 'put') await this.checkPut(op.request);
      else if (op.type === 'range' && kind === 'range')
        this.checkRangeRevision(op.request.revision);
      else if (op.type === 'txn') used += await this.checkPath(op.request, path, at + used, kind);
    }
    return used;
  }

  private checkRangeRevision(rev: number | undefined): void {
    // etcd checks every non-zero revision inside a txn, negatives too: one below the
    // compaction floor (-1 before the first compaction) is compacted.
    if (!rev) return;
    if (rev > this.s.revision)
      throw new EtceteraError('ERR_FUTURE_REV', { currentRevision: this.s.revision });
    if (rev < this.s.compactRevision) {
      throw new EtceteraError('ERR_COMPACTED', { compactRevision: this.s.compactRevision });
    }
  }

  private async execute(
    txn: WriteTxn,
    r: TxnRequest,
    path: boolean[],
    at: number,
  ): Promise<{ result: TxnResult; used: number }> {
    const succeeded = path[at] === true;
    let used = 1;
    const responses: ResponseOp[] = [];
    for (const op of succeeded ? r.success : r.failure) {
      if (op.type === 'txn') {
        const inner = await this.execute(txn, op.request, path, at + used);
        used += inner.used;
        // etcd leaves a nested txn's header empty: only the outer txn reports a revision.
        responses.push({ type: 'txn', response: { ...inner.result, revision: 0 as Revision } });
      } else {
        responses.push(await this.executeOp(txn, op));
      }
    }
    return { result: { revision: txn.revision, succeeded, responses }, used };
  }

  private async executeOp(
    txn: WriteTxn,
    op: Exclude<RequestOp, { type: 'txn' }>,
  ): Promise<ResponseOp> {
    switch (op.type) {
      case 'range':
        return { type: 'range', response: await this.range(txn, op.request) };
      case 'put':
        return { type: 'put', response: await this.put(txn, op.request) };
      case 'deleteRange':
        return { type: 'deleteRange', response: await this.deleteRange(txn, op.request) };
    }
  }

  // --- compaction and leases ------------------------------------------------------------

  private compact(rev: number): { revision: Revision } {
    if (rev > this.s.revision)
      throw new EtceteraError('ERR_FUTURE_REV', { currentRevision: this.s.revision });
    if (rev <= this.s.compactRevision) {
      throw new EtceteraError('ERR_COMPACTED', { compactRevision: this.s.compactRevision });
    }
    this.s.compactRevision = rev;
    return { revision: this.s.revision };
  }

  private leaseGrant(id: number, ttl: number, nowMs: number) {
    if (ttl > MAX_LEASE_TTL) throw new EtceteraError('ERR_LEASE_TTL_TOO_LARGE');
    if (this.s.lessor.has(id)) throw new EtceteraError('ERR_LEASE_EXIST');
    const granted = this.s.lessor.effectiveTtl(ttl);
    this.s.lessor.grantUnsafe(id as LeaseId, granted, nowMs);
    this.s.ops.push({ type: 'put', sublevel: this.s.db.lease, key: u64(id), value: u64(granted) });
    return { revision: this.s.revision, id: id as LeaseId, ttl: granted };
  }

  private async leaseRevoke(txn: WriteTxn, id: number): Promise<void> {
    if (!this.s.lessor.has(id)) throw new EtceteraError('ERR_LEASE_NOT_FOUND');
    const keys = this.s.lessor.remove(id);
    const values = await readValues(this.s, keys);
    for (const k of keys) txn.delete(k, values.get(k));
    this.s.ops.push({ type: 'del', sublevel: this.s.db.lease, key: u64(id) });
  }
}

function keyStr(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
}

/** etcd's compareKV: the key's field compared with the operand; a missing key is all zeros. */
function compareResult(c: Compare, kv: KeyValue | undefined): boolean {
  let cmp: number;
  switch (c.target) {
    case 'VALUE':
      cmp = Buffer.compare(kv?.value ?? new Uint8Array(0), c.value);
      break;
    case 'VERSION':
      cmp = Math.sign((kv?.version ?? 0) - c.version);
      break;
    case 'CREATE':
      cmp = Math.sign((kv?.createRevision ?? 0) - c.createRevision);
      break;
    case 'MOD':
      cmp = Math.sign((kv?.modRevision ?? 0) - c.modRevision);
      break;
    case 'LEASE':
      cmp = Math.sign((kv?.lease ?? 0) - c.lease);
      break;
  }
  switch (c.result) {
    case 'EQUAL':
      return cmp === 0;
    case 'NOT_EQUAL':
      return cmp !== 0;
    case 'GREATER':
      return cmp > 0;
    case 'LESS':
      return cmp < 0;
  }
}
