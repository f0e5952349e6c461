/**
 * Linearizability checker for key-value client histories (the Raft simulator's oracle).
 *
 * P-compositionality: a history of independent registers is linearizable iff each key's
 * sub-history is, so the check runs one Wing–Gong search per key (see wing-gong.ts). Gets
 * whose outcome is unknown constrain nothing and are dropped; puts whose outcome is unknown
 * may take effect at any time after their call, or never.
 */
import type { CheckResult, HistoryOp, RegisterState } from './types.js';
import { type RegisterOp, searchRegister } from './wing-gong.js';

export type { CheckResult, HistoryOp, KvOp } from './types.js';

/** Checks `history`; on failure names one key whose sub-history has no linearization. */
export function checkLinearizable(history: HistoryOp[]): CheckResult {
  const byKey = new Map<string, HistoryOp[]>();
  for (const h of history) {
    validate(h);
    if (h.op.kind === 'get' && !h.ok) continue;
    const list = byKey.get(h.op.key);
    if (list === undefined) byKey.set(h.op.key, [h]);
    else list.push(h);
  }
  // Sorted so that the key reported on failure does not depend on Map insertion order.
  for (const key of [...byKey.keys()].sort()) {
    const ops = pruneUnobservedUnknownPuts(byKey.get(key)!);
    const result = searchRegister(ops.map(toRegisterOp));
    if (!result.ok) {
      return { ok: false, key, explanation: explain(key, ops, result) };
    }
  }
  return { ok: true };
}

/**
 * Drops puts of unknown outcome whose value no completed get returned. This is exact, not
 * a heuristic: such a put can always be linearized "never" (so a linearization without it
 * is one with it), and a linearization with it stays one without it, since no read saw its
 * value. It matters: each unknown put may take effect anywhere after its call, so a few
 * dozen of them on one key (a chaotic simulation run) would otherwise multiply the search.
 */
function pruneUnobservedUnknownPuts(ops: HistoryOp[]): HistoryOp[] {
  const observed = new Set<string>();
  for (const h of ops) {
    if (h.op.kind === 'get' && h.ok && typeof h.output === 'string') observed.add(h.output);
  }
  return ops.filter((h) => h.ok || h.op.kind !== 'put' || observed.has(h.op.value));
}

function validate(h: HistoryOp): void {
  if (!Number.isFinite(h.call)) throw new RangeError(`lincheck: call time must be finite`);
  if (h.ok && !(h.ret >= h.call)) {
    throw new RangeError(
      `lincheck: client ${h.client} returned (${h.ret}) before call (${h.call})`,
    );
  }
  if (h.ok && !Number.isFinite(h.ret)) {
    throw new RangeError(`lincheck: a completed operation needs a finite return time`);
  }
  if (h.op.kind === 'get' && h.ok && h.output === undefined) {
    throw new RangeError(`lincheck: a completed get needs an output (null = absent)`);
  }
}

function toRegisterOp(h: HistoryOp): RegisterOp {
  const ret = h.ok ? h.ret : Number.POSITIVE_INFINITY;
  if (h.op.kind === 'put') return { kind: 'put', value: h.op.value, call: h.call, ret };
  return { kind: 'get', value: h.output ?? null, call: h.call, ret };
}

const MAX_LISTED = 8;

function explain(
  key: string,
  ops: readonly HistoryOp[],
  r: { prefix: number[]; state: RegisterState; blocked: number; candidates: number[] },
): string {
  const show = (i: number) => describeOp(ops[i]!);
  const prefix = r.prefix.slice(-MAX_LISTED).map(show);
  const elided = r.prefix.length > MAX_LISTED ? `... ${r.prefix.length - MAX_LISTED} more, ` : '';
  const candidates = r.candidates.slice(0, MAX_LISTED).map(show);
  return [
    `key ${JSON.stringify(key)}: no linearization of ${ops.length} operations.`,
    `Longest linearizable prefix (${r.prefix.length} ops): [${elided}${prefix.join('; ')}]`,
    `leaves the register ${fmtValue(r.state)}, and then ${show(r.blocked)} must take effect`,
    `but none of the pending operations can: [${candidates.join('; ')}]`,
  ].join('\n');
}

function fmtValue(v: RegisterState): string {
  return v === null ? 'absent' : JSON.stringify(v);
}

/** A one-line description of an operation, for failure messages. */
export function describeOp(h: HistoryOp): string {
  const ret = h.ok ? String(h.ret) : '?';
  const what =
    h.op.kind === 'put'
      ? `put(${JSON.stringify(h.op.value)})`
      : `get() -> ${h.ok ? fmtValue(h.output ?? null) : '?'}`;
  return `client ${h.client} ${what} [${h.call}, ${ret}]`;
}
