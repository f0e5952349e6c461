/**
 * The reference model's request checks: what etcd 3.4 rejects before it looks at any state
 * (v3rpc's checks), plus the type checks an embedded caller can get wrong (numbers that are
 * not safe integers, keys that are not bytes). A rejected request changes nothing.
 */
import type { Command, RangeRequest, RequestOp, TxnRequest } from '../../src/store/types.js';

export class ModelError extends Error {
  constructor(readonly code: string) {
    super(code);
  }
}

type Checked = { op: 'range'; request: RangeRequest } | { op: 'command'; command: Command };

interface Limits {
  maxTxnOps: number;
  maxRequestBytes: number;
}

const fail = (code: string): never => {
  throw new ModelError(code);
};

function int(n: unknown, min = Number.MIN_SAFE_INTEGER): void {
  if (n === undefined) return;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min) fail('ERR_INVALID_ARGUMENT');
}

function key(k: unknown): void {
  if (!(k instanceof Uint8Array)) fail('ERR_INVALID_ARGUMENT');
  if ((k as Uint8Array).length === 0) fail('ERR_EMPTY_KEY');
}

function optBytes(b: unknown): void {
  if (b !== undefined && !(b instanceof Uint8Array)) fail('ERR_INVALID_ARGUMENT');
}

function range(r: RangeRequest): void {
  key(r.key);
  optBytes(r.rangeEnd);
  int(r.limit);
  int(r.revision);
  int(r.minModRevision);
  int(r.maxModRevision);
  int(r.minCreateRevision);
  int(r.maxCreateRevision);
}

/** Checks one op of a txn; `budget` is what nested txns may still use (etcd: max - opc). */
function op(o: RequestOp, budget: number): void {
  switch (o.type) {
    case 'range':
      return range(o.request);
    case 'put': {
      const p = o.request;
      key(p.key);
      if (!(p.value instanceof Uint8Array)) fail('ERR_INVALID_ARGUMENT');
      int(p.lease, 0);
      if (p.ignoreValue && p.value.length > 0) fail('ERR_VALUE_PROVIDED');
      if (p.ignoreLease && p.lease) fail('ERR_LEASE_PROVIDED');
      return;
    }
    case 'deleteRange':
      key(o.request.key);
      return optBytes(o.request.rangeEnd);
    case 'txn':
      return txnShape(o.request, budget);
    default:
      fail('ERR_INVALID_ARGUMENT');
  }
}

/** etcd's op count rule: the longest of compare/success/failure, nested txns get what is left. */
function txnShape(t: TxnRequest, budget: number): void {
  if (!Array.isArray(t.compare) || !Array.isArray(t.success) || !Array.isArray(t.failure)) {
    fail('ERR_INVALID_ARGUMENT');
  }
  const count = Math.max(t.compare.length, t.success.length, t.failure.length);
  if (count > budget) fail('ERR_TOO_MANY_OPS');
  for (const c of t.compare) {
    key(c.key);
    optBytes(c.rangeEnd);
    const operand = (c as unknown as Record<string, unknown>)[
      {
        VALUE: 'value',
        VERSION: 'version',
        CREATE: 'createRevision',
        MOD: 'modRevision',
        LEASE: 'lease',
      }[c.target as string] ?? ''
    ];
    if (c.target === 'VALUE') {
      if (!(operand instanceof Uint8Array)) fail('ERR_INVALID_ARGUMENT');
    } else if (operand === undefined) fail('ERR_INVALID_ARGUMENT');
    else int(operand);
  }
  for (const o of t.success) op(o, budget - count);
  for (const o of t.failure) op(o, budget - count);
}

/**
 * Which keys a branch puts, and which intervals it deletes, for etcd's duplicate-key rule:
 * in one branch (nested txns included) a key may be put once and not both put and deleted.
 * The branches of one nested txn exclude each other, so a key may be put in both.
 * etcd 3.4 tests a put against the deletes of its own level and of the nested txns before
 * it (so "put in an earlier nested txn, delete in a later one" passes, checked against
 * etcd). It reads a "\0" range_end literally, as the interval [key, "\0"), which holds no
 * key: a from-key delete never conflicts.
 */
interface Branch {
  puts: Set<string>;
  dels: Array<{ start: string; end: string }>;
}

const latin1 = (b: Uint8Array): string => Buffer.from(b).toString('latin1');

function branch(ops: RequestOp[]): Branch {
  const dels: Branch['dels'] = [];
  for (const o of ops) {
    if (o.type !== 'deleteRange') continue;
    const start = latin1(o.request.key);
    const end = o.request.rangeEnd;
    dels.push({ start, end: end && end.length > 0 ? latin1(end) : `${start}\0` });
  }
  const deleted = (k: string) => dels.some((d) => d.start <= k && k < d.end);
  const puts = new Set<string>();
  const add = (k: string, allowed: boolean) => {
    if ((puts.has(k) && !allowed) || deleted(k)) fail('ERR_DUPLICATE_KEY');
    puts.add(k);
  };
  for (const o of ops) {
    if (o.type !== 'txn') continue;
    const then = branch(o.request.success);
    const otherwise = branch(o.request.failure);
    for (const k of then.puts) add(k, false);
    for (const k of otherwise.puts) add(k, then.puts.has(k));
    dels.push(...then.dels, ...otherwise.dels);
  }
  for (const o of ops) if (o.type === 'put') add(latin1(o.request.key), false);
  return { puts, dels };
}

function size(v: unknown): number {
  if (v instanceof Uint8Array) return v.length;
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + size(x), 0);
  if (v !== null && typeof v === 'object') return size(Object.values(v));
  return 0;
}

export function checkRequest(c: Checked, limits: Limits): void {
  if (c.op === 'range') return range(c.request);
  const cmd = c.command;
  switch (cmd.op) {
    case 'put':
      op({ type: 'put', request: cmd }, limits.maxTxnOps);
      break;
    case 'deleteRange':
      op({ type: 'deleteRange', request: cmd }, limits.maxTxnOps);
      break;
    case 'txn':
      txnShape(cmd, limits.maxTxnOps);
      branch(cmd.success);
      branch(cmd.failure);
      break;
    case 'compact':
      int(cmd.revision);
      break;
    case 'leaseGrant':
      int(cmd.id, 1);
      int(cmd.ttl);
      break;
    case 'leaseRevoke':
      int(cmd.id, 0);
      break;
    case 'noop':
      break;
    default:
      fail('ERR_INVALID_ARGUMENT');
  }
  if (size(cmd) > limits.maxRequestBytes) fail('ERR_REQUEST_TOO_LARGE');
}
