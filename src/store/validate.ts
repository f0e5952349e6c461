/**
 * Checks a request must pass before it is proposed or applied. They depend only on the
 * request itself (never on state), so a rejected request changes nothing anywhere. The
 * limits (op count, size) are checked before proposing only (`APPLY_LIMITS`). The
 * order of checks and the errors follow etcd 3.4's v3rpc validation.
 */

import { EtceteraError } from '../errors.js';
import { type AuthRequest, type PasswordHash, PERMISSION_TYPES } from './auth.js';
import { type Interval, intervalContains, toInterval } from './interval.js';
import type {
  Command,
  Compare,
  DeleteRangeRequest,
  PutRequest,
  RangeRequest,
  RequestOp,
  TxnRequest,
} from './types.js';
import { ALARM_TYPES } from './types.js';

export const DEFAULT_MAX_TXN_OPS = 128;
export const DEFAULT_MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;

export interface Limits {
  maxTxnOps: number;
  maxRequestBytes: number;
}

/**
 * The limits an entry is applied under. `--max-txn-ops` and `--max-request-bytes` are each
 * member's own settings, checked once, before the command is proposed (as etcd does): an
 * entry another member proposed under other settings must apply the same way everywhere.
 */
export const APPLY_LIMITS: Limits = {
  maxTxnOps: Number.POSITIVE_INFINITY,
  maxRequestBytes: Number.POSITIVE_INFINITY,
};

function invalid(detail: string): EtceteraError {
  return new EtceteraError('ERR_INVALID_ARGUMENT', { detail });
}

function checkInt(name: string, n: unknown, min = Number.MIN_SAFE_INTEGER): void {
  if (n === undefined) return;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min) {
    throw invalid(`${name} must be an integer${min === 0 ? ' >= 0' : ''}`);
  }
}

function checkBytes(name: string, b: unknown, required: boolean): void {
  if (b === undefined && !required) return;
  if (!(b instanceof Uint8Array)) throw invalid(`${name} must be bytes`);
}

export function checkLeaseId(name: string, id: unknown): void {
  checkInt(name, id, 0);
}

export function checkRange(r: RangeRequest): void {
  checkBytes('key', r.key, true);
  checkBytes('range_end', r.rangeEnd, false);
  if (r.key.length === 0) throw new EtceteraError('ERR_EMPTY_KEY');
  for (const f of [
    'limit',
    'revision',
    'minModRevision',
    'maxModRevision',
    'minCreateRevision',
    'maxCreateRevision',
  ] as const) {
    checkInt(f, r[f]);
  }
}

export function checkPut(r: PutRequest): void {
  checkBytes('key', r.key, true);
  checkBytes('value', r.value, true);
  if (r.key.length === 0) throw new EtceteraError('ERR_EMPTY_KEY');
  checkLeaseId('lease', r.lease);
  if (r.ignoreValue && r.value.length !== 0) throw new EtceteraError('ERR_VALUE_PROVIDED');
  if (r.ignoreLease && (r.lease ?? 0) !== 0) throw new EtceteraError('ERR_LEASE_PROVIDED');
}

export function checkDeleteRange(r: DeleteRangeRequest): void {
  checkBytes('key', r.key, true);
  checkBytes('range_end', r.rangeEnd, false);
  if (r.key.length === 0) throw new EtceteraError('ERR_EMPTY_KEY');
}

function checkCompare(c: Compare): void {
  checkBytes('compare key', c.key, true);
  if (c.key.length === 0) throw new EtceteraError('ERR_EMPTY_KEY');
  switch (c.target) {
    case 'VALUE':
      return checkBytes('compare value', c.value, true);
    case 'VERSION':
      return checkInt('compare version', c.version);
    case 'CREATE':
      return checkInt('compare create_revision', c.createRevision);
    case 'MOD':
      return checkInt('compare mod_revision', c.modRevision);
    case 'LEASE':
      return checkInt('compare lease', c.lease);
    default:
      throw invalid('unknown compare target');
  }
}

function checkRequestOp(op: RequestOp, maxTxnOps: number): void {
  switch (op.type) {
    case 'range':
      return checkRange(op.request);
    case 'put':
      return checkPut(op.request);
    case 'deleteRange':
      return checkDeleteRange(op.request);
    case 'txn':
      return checkTxnOps(op.request, maxTxnOps);
    default:
      throw invalid('unknown request op');
  }
}

/** etcd's checkTxnRequest: op counts, then every compare and op; nested txns get the remaining budget. */
function checkTxnOps(r: TxnRequest, maxTxnOps: number): void {
  if (!Array.isArray(r.compare) || !Array.isArray(r.success) || !Array.isArray(r.failure)) {
    throw invalid('txn needs compare, success and failure lists');
  }
  const opc = Math.max(r.compare.length, r.success.length, r.failure.length);
  if (opc > maxTxnOps) throw new EtceteraError('ERR_TOO_MANY_OPS');
  for (const c of r.compare) checkCompare(c);
  for (const op of r.success) checkRequestOp(op, maxTxnOps - opc);
  for (const op of r.failure) checkRequestOp(op, maxTxnOps - opc);
}

/**
 * etcd's checkIntervals: within one branch (following nested txns), a key may be put once
 * and may not be both put and deleted. The two branches of a nested txn exclude each other,
 * so a key put in both is fine.
 */
function checkIntervals(ops: RequestOp[]): { puts: Set<string>; dels: Interval[] } {
  const dels: Interval[] = [];
  for (const op of ops) {
    if (op.type === 'deleteRange') dels.push(toInterval(op.request.key, op.request.rangeEnd));
  }
  const hitsDel = (k: string) => dels.some((iv) => intervalContains(iv, Buffer.from(k, 'latin1')));
  const puts = new Set<string>();
  for (const op of ops) {
    if (op.type !== 'txn') continue;
    const then = checkIntervals(op.request.success);
    const otherwise = checkIntervals(op.request.failure);
    for (const k of then.puts) {
      if (puts.has(k) || hitsDel(k)) throw new EtceteraError('ERR_DUPLICATE_KEY');
      puts.add(k);
    }
    for (const k of otherwise.puts) {
      if ((puts.has(k) && !then.puts.has(k)) || hitsDel(k))
        throw new EtceteraError('ERR_DUPLICATE_KEY');
      puts.add(k);
    }
    dels.push(...then.dels, ...otherwise.dels);
  }
  for (const op of ops) {
    if (op.type !== 'put') continue;
    const k = Buffer.from(op.request.key).toString('latin1');
    if (puts.has(k) || hitsDel(k)) throw new EtceteraError('ERR_DUPLICATE_KEY');
    puts.add(k);
  }
  return { puts, dels };
}

export function checkTxn(r: TxnRequest, maxTxnOps: number): void {
  checkTxnOps(r, maxTxnOps);
  checkIntervals(r.success);
  checkIntervals(r.failure);
}

/** An upper estimate of a command's encoded size, for the request size limit. */
export function commandSize(c: Command): number {
  let n = 16;
  const visit = (v: unknown): void => {
    if (v instanceof Uint8Array) n += v.length + 8;
    else if (Array.isArray(v)) for (const x of v) visit(x);
    else if (v !== null && typeof v === 'object') for (const x of Object.values(v)) visit(x);
    else n += 8;
  };
  visit(c);
  return n;
}

/** Every request check for a write command. Throws the first violation. */
export function checkCommand(c: Command, limits: Limits): void {
  switch (c.op) {
    case 'put':
      checkPut(c);
      break;
    case 'deleteRange':
      checkDeleteRange(c);
      break;
    case 'txn':
      checkTxn(c, limits.maxTxnOps);
      break;
    case 'compact':
      checkInt('revision', c.revision);
      break;
    case 'leaseGrant':
      checkLeaseId('ID', c.id);
      checkInt('TTL', c.ttl);
      if (c.id === 0) throw invalid('lease ID must be chosen before apply');
      break;
    case 'leaseRevoke':
      checkLeaseId('ID', c.id);
      break;
    case 'alarm':
      if (c.action !== 'activate' && c.action !== 'deactivate')
        throw invalid('alarm action must be activate or deactivate');
      if (
        typeof c.memberId !== 'string' ||
        !/^\d{1,20}$/.test(c.memberId) ||
        BigInt(c.memberId) >= 2n ** 64n
      )
        throw invalid('alarm member ID must be a uint64 in decimal');
      if (!ALARM_TYPES.includes(c.alarm)) throw invalid('alarm must be NOSPACE or CORRUPT');
      break;
    case 'auth':
      checkAuthRequest(c.request);
      break;
    case 'noop':
      break;
    default:
      throw invalid('unknown command');
  }
  if (commandSize(c) > limits.maxRequestBytes) throw new EtceteraError('ERR_REQUEST_TOO_LARGE');
}

/** The shape of an auth command (names are strings, permissions well-formed, hashes present). */
function checkAuthRequest(r: AuthRequest): void {
  const str = (v: unknown, what: string) => {
    if (typeof v !== 'string') throw invalid(`${what} must be a string`);
  };
  const hash = (p: unknown) => {
    if (p === undefined) return;
    const h = p as Partial<PasswordHash> | null;
    if (
      h === null ||
      h.scheme !== 'scrypt' ||
      typeof h.salt !== 'string' ||
      typeof h.hash !== 'string'
    )
      throw invalid('password must be a scrypt hash with its salt');
  };
  if (r === null || typeof r !== 'object') throw invalid('auth request must be an object');
  switch (r.type) {
    case 'enable':
    case 'disable':
      return;
    case 'userAdd':
    case 'userChangePassword':
      str(r.name, 'user name');
      hash(r.password);
      return;
    case 'userDelete':
    case 'roleAdd':
    case 'roleDelete':
      str(r.name, 'name');
      return;
    case 'userGrantRole':
    case 'userRevokeRole':
      str(r.name, 'user name');
      str(r.role, 'role name');
      return;
    case 'roleGrantPermission':
      str(r.name, 'role name');
      if (!PERMISSION_TYPES.includes(r.permission?.permType))
        throw invalid('permission type must be READ, WRITE or READWRITE');
      checkBytes('key', r.permission.key, true);
      checkBytes('range_end', r.permission.rangeEnd, true);
      return;
    case 'roleRevokePermission':
      str(r.name, 'role name');
      checkBytes('key', r.key, true);
      checkBytes('range_end', r.rangeEnd, true);
      return;
    case 'authenticate':
      str(r.name, 'user name');
      str(r.token, 'token');
      if (r.token.length === 0) throw invalid('token must not be empty');
      if (!Number.isSafeInteger(r.checkedRevision) || r.checkedRevision < 1)
        throw invalid('checked auth revision must be a positive integer');
      return;
    default:
      throw invalid('unknown auth request');
  }
}
