/**
 * Generators of store operations for the property tests, and their resolution into real
 * commands.
 *
 * Operations are generated in an abstract, readable form (keys as latin1 strings, revisions
 * as picks relative to the state at the time) and resolved against the reference model
 * just before they run, so that a shrunk counterexample still reads at sensible revisions.
 * The key alphabet is small, so keys collide, and holds the awkward bytes: 0x00 (also the
 * "\0" range_end), a key that is a prefix of another, 0xff.
 */
import fc from 'fast-check';
import type {
  Command,
  Compare,
  RangeRequest,
  RequestOp,
  SortOrder,
  SortTarget,
  TxnRequest,
} from '../../src/store/types.js';
import { bytes, type Model } from './model.js';

export const KEYS = ['\x00', 'a', 'a\x00', 'ab', 'b', 'b\xff', 'c', '\xff'] as const;
const ENDS = ['\x00', 'a', 'ab', 'b', 'b\xff', 'c', '\xff', 'z'] as const;
const VALUES = ['', 'x', 'y', 'xy'] as const;

/** A revision relative to the state when the op runs. */
export type RevPick = { zero: true } | { frac: number } | { abs: number } | { future: number };

export interface ARange {
  key: string;
  end?: string;
  limit?: number;
  revision?: RevPick;
  sortOrder?: SortOrder;
  sortTarget?: SortTarget;
  keysOnly?: boolean;
  countOnly?: boolean;
  minMod?: RevPick;
  maxMod?: RevPick;
  minCreate?: RevPick;
  maxCreate?: RevPick;
}

export interface APut {
  key: string;
  value: string;
  lease: number;
  prevKv?: boolean;
  ignoreValue?: boolean;
  ignoreLease?: boolean;
}

export interface ADel {
  key: string;
  end?: string;
  prevKv?: boolean;
}

export type ACompare = {
  key: string;
  end?: string;
  result: Compare['result'];
  target: Compare['target'];
  operand: RevPick | string;
};

export type AReq =
  | { type: 'range'; r: ARange }
  | { type: 'put'; r: APut }
  | { type: 'del'; r: ADel }
  | { type: 'txn'; r: ATxn };

export interface ATxn {
  compare: ACompare[];
  success: AReq[];
  failure: AReq[];
}

export type AWrite =
  | { t: 'put'; r: APut }
  | { t: 'del'; r: ADel }
  | { t: 'txn'; r: ATxn }
  | { t: 'compact'; rev: RevPick }
  | { t: 'grant'; id: number; ttl: number }
  | { t: 'revoke'; id: number };

export type AOp = AWrite | { t: 'range'; r: ARange } | { t: 'reopen' };

// --- generators ---------------------------------------------------------------------------

const key = fc.constantFrom(...KEYS);
const end = fc.constantFrom(...ENDS);

export const revPick: fc.Arbitrary<RevPick> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ zero: true as const }) },
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 1000 }).map((f) => ({ frac: f })) },
  { weight: 1, arbitrary: fc.integer({ min: -2, max: 2 }).map((n) => ({ abs: n })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }).map((n) => ({ future: n })) },
);

/** `arb` in `percent` of the cases, otherwise absent. */
const sometimes = <T>(arb: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | undefined> =>
  fc.oneof(
    { weight: 100 - percent, arbitrary: fc.constant(undefined) },
    { weight: percent, arbitrary: arb },
  );

/** A range end; one at or below the key (an empty range) only now and then. */
const endFor = (k: string, e: string | undefined, keepEmpty: boolean): string | undefined =>
  e !== undefined && e !== '\x00' && e <= k && !keepEmpty ? '\xff\xff' : e;

export const rangeArb: fc.Arbitrary<ARange> = fc
  .record({
    keepEmpty: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
    key,
    end: sometimes(end, 70),
    limit: sometimes(fc.integer({ min: -1, max: 4 }), 40),
    revision: sometimes(revPick, 40),
    sortOrder: sometimes(fc.constantFrom('NONE', 'ASCEND', 'DESCEND'), 40),
    sortTarget: sometimes(fc.constantFrom('KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE'), 40),
    keysOnly: sometimes(fc.constant(true), 20),
    countOnly: sometimes(fc.constant(true), 15),
    minMod: sometimes(revPick, 10),
    maxMod: sometimes(revPick, 10),
    minCreate: sometimes(revPick, 10),
    maxCreate: sometimes(revPick, 10),
  })
  .map(({ keepEmpty, ...r }) => ({ ...r, end: endFor(r.key, r.end, keepEmpty) }));

export const putArb: fc.Arbitrary<APut> = fc
  .record({
    key,
    value: fc.constantFrom(...VALUES),
    lease: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, fc.constantFrom(1, 2, 3, 4)),
    prevKv: fc.boolean(),
    flags: fc.oneof(
      { weight: 8, arbitrary: fc.constant('none') },
      fc.constantFrom('value', 'lease', 'both'),
    ),
    obey: fc.integer({ min: 0, max: 9 }),
  })
  .map(({ flags, obey, ...p }) => {
    const ignoreValue = flags === 'value' || flags === 'both';
    const ignoreLease = flags === 'lease' || flags === 'both';
    // Mostly well-formed; now and then with the value or lease the flag forbids.
    const put: APut = { ...p, ignoreValue, ignoreLease };
    if (obey > 0 && ignoreValue) put.value = '';
    if (obey > 0 && ignoreLease) put.lease = 0;
    return put;
  });

export const delArb: fc.Arbitrary<ADel> = fc
  .record({
    keepEmpty: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
    key,
    end: sometimes(end, 50),
    prevKv: fc.boolean(),
  })
  .map(({ keepEmpty, ...d }) => ({ ...d, end: endFor(d.key, d.end, keepEmpty) }));

const compareArb: fc.Arbitrary<ACompare> = fc
  .record({
    key,
    end: sometimes(end, 25),
    result: fc.constantFrom('EQUAL', 'GREATER', 'LESS', 'NOT_EQUAL'),
    target: fc.constantFrom('VALUE', 'VERSION', 'CREATE', 'MOD', 'LEASE'),
    value: fc.constantFrom(...VALUES),
    small: fc.integer({ min: 0, max: 3 }),
    rev: revPick,
  })
  .map(({ value, small, rev, ...c }) => {
    const operand =
      c.target === 'VALUE'
        ? value
        : c.target === 'VERSION' || c.target === 'LEASE'
          ? { abs: small }
          : rev;
    return c.end === undefined ? { ...c, operand, end: undefined } : { ...c, operand };
  });

function txnArbOf(depth: number): fc.Arbitrary<ATxn> {
  const leaf: fc.Arbitrary<AReq>[] = [
    rangeArb.map((r) => ({ type: 'range' as const, r })),
    putArb.map((r) => ({ type: 'put' as const, r })),
    putArb.map((r) => ({ type: 'put' as const, r })),
    delArb.map((r) => ({ type: 'del' as const, r })),
  ];
  const req: fc.Arbitrary<AReq> =
    depth > 0
      ? fc.oneof(
          ...leaf,
          txnArbOf(depth - 1).map((r) => ({ type: 'txn' as const, r })),
        )
      : fc.oneof(...leaf);
  return fc.record({
    compare: fc.array(compareArb, { maxLength: 2 }),
    success: fc.array(req, { maxLength: 3 }),
    failure: fc.array(req, { maxLength: 3 }),
  });
}

export const txnArb = txnArbOf(2);

/**
 * The one way etcd lets a txn change a key twice: a put in one nested txn, then a delete
 * covering the key in a later one (etcd's duplicate check only looks backwards). Rare by
 * chance, so made on purpose now and then.
 */
const putThenDeleteArb: fc.Arbitrary<ATxn> = fc
  .tuple(putArb, delArb, txnArb)
  .map(([p, d, rest]) => ({
    compare: [],
    success: [
      { type: 'txn', r: { compare: [], success: [{ type: 'put', r: p }], failure: [] } },
      { type: 'txn', r: { ...rest, success: [{ type: 'del', r: { ...d, key: p.key } }] } },
    ],
    failure: [],
  }));

export const writeArb: fc.Arbitrary<AWrite> = fc.oneof(
  { weight: 8, arbitrary: putArb.map((r) => ({ t: 'put' as const, r })) },
  { weight: 1, arbitrary: delArb.map((r) => ({ t: 'del' as const, r })) },
  { weight: 5, arbitrary: txnArb.map((r) => ({ t: 'txn' as const, r })) },
  { weight: 1, arbitrary: putThenDeleteArb.map((r) => ({ t: 'txn' as const, r })) },
  { weight: 1, arbitrary: revPick.map((rev) => ({ t: 'compact' as const, rev })) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('grant' as const),
      id: fc.constantFrom(1, 2, 3),
      ttl: fc.constantFrom(-1, 0, 1, 2, 5, 9_000_000_001),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('revoke' as const), id: fc.constantFrom(1, 2, 3, 4) }),
  },
);

export const opArb: fc.Arbitrary<AOp> = fc.oneof(
  { weight: 16, arbitrary: writeArb },
  { weight: 5, arbitrary: rangeArb.map((r) => ({ t: 'range' as const, r })) },
  { weight: 1, arbitrary: fc.constant({ t: 'reopen' as const }) },
);

// --- resolution -------------------------------------------------------------------------

export function resolveRev(p: RevPick, m: Model): number {
  if ('zero' in p) return 0;
  if ('frac' in p) return Math.round((p.frac / 1000) * m.revision);
  if ('abs' in p) return p.abs;
  return m.revision + p.future;
}

const b = (s: string) => bytes(s);
const optEnd = (e: string | undefined) => (e === undefined ? undefined : b(e));

export function resolveRange(r: ARange, m: Model): RangeRequest {
  const out: RangeRequest = { key: b(r.key) };
  if (r.end !== undefined) out.rangeEnd = b(r.end);
  if (r.limit !== undefined) out.limit = r.limit;
  if (r.revision) out.revision = resolveRev(r.revision, m);
  if (r.sortOrder) out.sortOrder = r.sortOrder;
  if (r.sortTarget) out.sortTarget = r.sortTarget;
  if (r.keysOnly !== undefined) out.keysOnly = r.keysOnly;
  if (r.countOnly !== undefined) out.countOnly = r.countOnly;
  if (r.minMod) out.minModRevision = resolveRev(r.minMod, m);
  if (r.maxMod) out.maxModRevision = resolveRev(r.maxMod, m);
  if (r.minCreate) out.minCreateRevision = resolveRev(r.minCreate, m);
  if (r.maxCreate) out.maxCreateRevision = resolveRev(r.maxCreate, m);
  return out;
}

function resolveCompare(c: ACompare, m: Model): Compare {
  const base = { key: b(c.key), rangeEnd: optEnd(c.end), result: c.result };
  const n = typeof c.operand === 'string' ? 0 : resolveRev(c.operand, m);
  switch (c.target) {
    case 'VALUE':
      return { ...base, target: 'VALUE', value: b(typeof c.operand === 'string' ? c.operand : '') };
    case 'VERSION':
      return { ...base, target: 'VERSION', version: n };
    case 'CREATE':
      return { ...base, target: 'CREATE', createRevision: n };
    case 'MOD':
      return { ...base, target: 'MOD', modRevision: n };
    case 'LEASE':
      return { ...base, target: 'LEASE', lease: n };
  }
}

const resolvePut = (p: APut) => ({ ...p, key: b(p.key), value: b(p.value) });
const resolveDel = (d: ADel) => ({ key: b(d.key), rangeEnd: optEnd(d.end), prevKv: d.prevKv });

export function resolveTxn(t: ATxn, m: Model): TxnRequest {
  const req = (o: AReq): RequestOp => {
    switch (o.type) {
      case 'range':
        return { type: 'range', request: resolveRange(o.r, m) };
      case 'put':
        return { type: 'put', request: resolvePut(o.r) };
      case 'del':
        return { type: 'deleteRange', request: resolveDel(o.r) };
      case 'txn':
        return { type: 'txn', request: resolveTxn(o.r, m) };
    }
  };
  return {
    compare: t.compare.map((c) => resolveCompare(c, m)),
    success: t.success.map(req),
    failure: t.failure.map(req),
  };
}

/**
 * etcd 3.4 lets a from-key delete ("\0" range_end) share a txn with a put of a key it
 * covers (its duplicate check reads "\0" literally); the store rejects that as a duplicate
 * key on purpose (see the report: its history replay cannot hold two changes of one key in
 * one revision). Both answers are defensible, so the generators never make that case: in a
 * txn that puts anything, a from-key delete is bounded by "\xff\xff" instead (the same keys).
 */
function boundFromKeyDeletes(t: TxnRequest): TxnRequest {
  const ops = (list: RequestOp[]): RequestOp[] => list.flatMap((o) => visit(o));
  const puts = (list: RequestOp[]): boolean =>
    list.some((o) => o.type === 'put' || (o.type === 'txn' && hasPut(o.request)));
  const hasPut = (x: TxnRequest) => puts(x.success) || puts(x.failure);
  const visit = (o: RequestOp): RequestOp[] => {
    if (o.type === 'deleteRange' && o.request.rangeEnd?.length === 1 && o.request.rangeEnd[0] === 0)
      return [{ type: 'deleteRange', request: { ...o.request, rangeEnd: bytes('\xff\xff') } }];
    if (o.type === 'txn') return [{ type: 'txn', request: bound(o.request) }];
    return [o];
  };
  const bound = (x: TxnRequest): TxnRequest => ({
    ...x,
    success: ops(x.success),
    failure: ops(x.failure),
  });
  return hasPut(t) ? bound(t) : t;
}

/** The command for an abstract write, resolved against the model's current state. */
export function resolveWrite(w: AWrite, m: Model): Command {
  switch (w.t) {
    case 'put':
      return { op: 'put', ...resolvePut(w.r) };
    case 'del':
      return { op: 'deleteRange', ...resolveDel(w.r) };
    case 'txn':
      return { op: 'txn', ...boundFromKeyDeletes(resolveTxn(w.r, m)) };
    case 'compact':
      return { op: 'compact', revision: resolveRev(w.rev, m) };
    case 'grant':
      return { op: 'leaseGrant', id: w.id, ttl: w.ttl };
    case 'revoke':
      return { op: 'leaseRevoke', id: w.id };
  }
}
