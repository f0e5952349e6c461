/**
 * Alarms as replicated state, as etcd keeps them: a set of (member ID, alarm type) raised and
 * cleared by `alarm` commands, applied in log order on every member, written to the meta
 * record `alarms` in the same atomic batch as the command (so it is in every Raft snapshot
 * and survives a restart), and consulted by apply for every write:
 *
 *   CORRUPT raised: every write is refused (put, delete, a txn that writes, compaction,
 *                   lease grant and revoke) with `etcdserver: corrupt cluster`; reads and
 *                   read-only txns still work.
 *   NOSPACE raised: requests that add data are refused (put, a txn with a put in either
 *                   branch, lease grant) with `etcdserver: mvcc: database space exceeded`;
 *                   deletes, compaction and lease revokes still work, so space can be freed.
 *
 * CORRUPT is checked first, as etcd wraps its capped applier inside the corrupt one. The
 * check depends only on the replicated alarm set, so every member answers a command alike.
 */
import { type ErrorCode, EtceteraError } from '../errors.js';
import type { Alarm, AlarmType, Command, RequestOp } from './types.js';

export const META_ALARMS = Buffer.from('alarms');

export class AlarmSet {
  private items: Alarm[] = [];

  /** The raised alarms, ordered by member ID then type (etcd's order is not specified). */
  list(): Alarm[] {
    return [...this.items];
  }

  has(type: AlarmType): boolean {
    return this.items.some((a) => a.alarm === type);
  }

  get size(): number {
    return this.items.length;
  }

  /** Raises an alarm (idempotent). Returns it, as etcd answers an ACTIVATE. */
  activate(a: Alarm): Alarm {
    if (!this.items.some((x) => same(x, a))) {
      this.items.push({ memberId: a.memberId, alarm: a.alarm });
      this.items.sort(order);
    }
    return { memberId: a.memberId, alarm: a.alarm };
  }

  /** Clears an alarm. Returns it when it was raised, as etcd answers a DEACTIVATE. */
  deactivate(a: Alarm): Alarm | undefined {
    const i = this.items.findIndex((x) => same(x, a));
    if (i < 0) return undefined;
    this.items.splice(i, 1);
    return { memberId: a.memberId, alarm: a.alarm };
  }

  /** The meta record's bytes. */
  encode(): Uint8Array {
    return new Uint8Array(Buffer.from(JSON.stringify(this.items), 'utf8'));
  }

  /** Replaces the set with a meta record's content (absent: no alarms). */
  load(raw: Uint8Array | undefined): void {
    this.items = [];
    if (raw === undefined) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(raw).toString('utf8'));
    } catch (e) {
      throw new EtceteraError('ERR_CORRUPT', { detail: 'alarm record is not JSON' }, { cause: e });
    }
    if (!Array.isArray(parsed) || !parsed.every(isAlarm))
      throw new EtceteraError('ERR_CORRUPT', { detail: 'alarm record has a bad entry' });
    this.items = parsed.map((a) => ({ memberId: a.memberId, alarm: a.alarm })).sort(order);
  }

  /** Why `c` must be refused under the raised alarms; undefined when it may apply. */
  refusal(c: Command): ErrorCode | undefined {
    if (this.items.length === 0) return undefined;
    if (this.has('CORRUPT') && writes(c)) return 'ERR_CORRUPT_CLUSTER';
    if (this.has('NOSPACE') && addsData(c)) return 'ERR_NO_SPACE';
    return undefined;
  }
}

function same(a: Alarm, b: Alarm): boolean {
  return a.memberId === b.memberId && a.alarm === b.alarm;
}

function order(a: Alarm, b: Alarm): number {
  const x = BigInt(a.memberId);
  const y = BigInt(b.memberId);
  return x < y ? -1 : x > y ? 1 : a.alarm < b.alarm ? -1 : a.alarm > b.alarm ? 1 : 0;
}

function isAlarm(v: unknown): v is Alarm {
  const a = v as Partial<Alarm> | null;
  return (
    a !== null &&
    typeof a === 'object' &&
    typeof a.memberId === 'string' &&
    /^\d+$/.test(a.memberId) &&
    (a.alarm === 'NOSPACE' || a.alarm === 'CORRUPT')
  );
}

/** Whether any op in these branches (nested txns followed) satisfies `pred`. */
function anyOp(ops: readonly RequestOp[], pred: (op: RequestOp) => boolean): boolean {
  return ops.some(
    (op) =>
      pred(op) ||
      (op.type === 'txn' && (anyOp(op.request.success, pred) || anyOp(op.request.failure, pred))),
  );
}

/** etcd's quota cost > 0: a put, a txn with a put in either branch, a lease grant. */
export function addsData(c: Command): boolean {
  switch (c.op) {
    case 'put':
    case 'leaseGrant':
      return true;
    case 'txn': {
      const put = (op: RequestOp) => op.type === 'put';
      return anyOp(c.success, put) || anyOp(c.failure, put);
    }
    default:
      return false;
  }
}

/** Whether a command changes the keyspace or the leases (a read-only txn does not). */
export function writes(c: Command): boolean {
  switch (c.op) {
    case 'put':
    case 'deleteRange':
    case 'compact':
    case 'leaseGrant':
    case 'leaseRevoke':
      return true;
    case 'txn': {
      const w = (op: RequestOp) => op.type === 'put' || op.type === 'deleteRange';
      return anyOp(c.success, w) || anyOp(c.failure, w);
    }
    default:
      return false;
  }
}
