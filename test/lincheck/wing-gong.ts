/**
 * Wing & Gong's linearizability search with Lowe's memoisation, for one register.
 *
 * The history is laid out as a doubly linked list of call and return events in time
 * order. The search walks the list from its head: at a call it tries to linearize that
 * operation now (the register model must accept it), removing ("lifting") its call and
 * return from the list; at a return it has met an operation that must already have taken
 * effect but has not, so it backtracks to the last choice. A (linearized set, register
 * state) pair already explored is never explored again (Lowe's cache), which is what makes
 * the search practical on histories with a lot of concurrency.
 *
 * Invariants:
 *  1. A call event sorts before every return event at the same time, so operations whose
 *     intervals only touch are concurrent (the lenient reading: no false alarms from a
 *     coarse clock).
 *  2. An operation with unknown outcome returns at Infinity: it may take effect at any
 *     point after its call. "Never" needs no separate case: a put linearized after every
 *     other operation is unobservable, and the model always accepts a put.
 *  3. `linearized` and the list are restored exactly on backtrack (lift/unlift are
 *     inverses applied in stack order).
 */
import type { RegisterState } from './types.js';

/** One operation on a single register, already normalised by the caller. */
export interface RegisterOp {
  kind: 'put' | 'get';
  /** The value put, or the value a get returned (`null` = absent). */
  value: RegisterState;
  call: number;
  /** Infinity when the outcome is unknown. */
  ret: number;
}

export type SearchResult =
  | { ok: true }
  | {
      ok: false;
      /** The longest prefix of operations (indices) that could be linearized. */
      prefix: number[];
      /** Register state after that prefix. */
      state: RegisterState;
      /** The operation whose return was reached before it could take effect. */
      blocked: number;
      /** Operations that were candidates next (called, not yet linearized). */
      candidates: number[];
    };

const NIL = -1;

interface EventList {
  next: Int32Array;
  prev: Int32Array;
  /** Operation index of each node (node 0 is the head sentinel). */
  op: Int32Array;
  /** For a call node, its return node; NIL for return nodes. */
  match: Int32Array;
}

function buildList(ops: readonly RegisterOp[]): EventList {
  const events: { time: number; isCall: boolean; op: number }[] = [];
  ops.forEach((o, i) => {
    events.push({ time: o.call, isCall: true, op: i });
    events.push({ time: o.ret, isCall: false, op: i });
  });
  events.sort((a, b) => {
    if (a.time !== b.time) return a.time < b.time ? -1 : 1;
    if (a.isCall !== b.isCall) return a.isCall ? -1 : 1; // invariant 1
    return a.op - b.op;
  });
  const n = events.length + 1;
  const list: EventList = {
    next: new Int32Array(n).fill(NIL),
    prev: new Int32Array(n).fill(NIL),
    op: new Int32Array(n).fill(NIL),
    match: new Int32Array(n).fill(NIL),
  };
  const retNode = new Int32Array(ops.length);
  events.forEach((e, k) => {
    const node = k + 1;
    list.op[node] = e.op;
    list.prev[node] = k;
    list.next[k] = node;
    if (!e.isCall) retNode[e.op] = node;
  });
  events.forEach((e, k) => {
    if (e.isCall) list.match[k + 1] = retNode[e.op]!;
  });
  return list;
}

function lift(l: EventList, call: number): void {
  const ret = l.match[call]!;
  l.next[l.prev[call]!] = l.next[call]!;
  l.prev[l.next[call]!] = l.prev[call]!; // a call always has a successor: its return
  l.next[l.prev[ret]!] = l.next[ret]!;
  const after = l.next[ret]!;
  if (after !== NIL) l.prev[after] = l.prev[ret]!;
}

function unlift(l: EventList, call: number): void {
  const ret = l.match[call]!;
  l.next[l.prev[ret]!] = ret;
  const after = l.next[ret]!;
  if (after !== NIL) l.prev[after] = ret;
  l.next[l.prev[call]!] = call;
  l.prev[l.next[call]!] = call;
}

/** The register model: returns the next state, or undefined when `op` cannot happen now. */
function stepRegister(state: RegisterState, op: RegisterOp): RegisterState | undefined {
  if (op.kind === 'put') return op.value;
  return op.value === state ? state : undefined;
}

/**
 * Lowe's cache of explored (linearized set, state) pairs. Lookups are by a Zobrist hash
 * (XOR of a random word per linearized operation, kept incrementally, mixed with a hash of
 * the state), and a hit is confirmed by comparing the full bitset and state, so a hash
 * collision can never prune a branch wrongly.
 */
class Memo {
  private readonly table = new Map<number, { bits: Uint32Array; state: RegisterState }[]>();

  /** Adds the pair; returns false when it was already present. */
  add(hash: number, bits: Uint32Array, state: RegisterState): boolean {
    const key = (hash ^ hashState(state)) >>> 0;
    const bucket = this.table.get(key);
    if (bucket === undefined) {
      this.table.set(key, [{ bits: bits.slice(), state }]);
      return true;
    }
    for (const e of bucket) if (e.state === state && sameBits(e.bits, bits)) return false;
    bucket.push({ bits: bits.slice(), state });
    return true;
  }
}

function sameBits(a: Uint32Array, b: Uint32Array): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function hashState(state: RegisterState): number {
  if (state === null) return 0x9e3779b9;
  let h = 0x811c9dc5;
  for (let i = 0; i < state.length; i++) h = Math.imul(h ^ state.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** Deterministic per-operation random words (xorshift), so runs are reproducible. */
function zobristWords(n: number): Uint32Array {
  const words = new Uint32Array(n);
  let x = 0x2545f491;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x >>> 0;
  }
  return words;
}

/** Decides whether `ops` (all on one register, initially absent) are linearizable. */
export function searchRegister(ops: readonly RegisterOp[]): SearchResult {
  const l = buildList(ops);
  const bits = new Uint32Array(Math.ceil(ops.length / 32) || 1);
  const zobrist = zobristWords(ops.length);
  let hash = 0;
  const memo = new Memo();
  const stack: { node: number; state: RegisterState }[] = [];
  let state: RegisterState = null;
  let best: Extract<SearchResult, { ok: false }> | undefined;
  let node = l.next[0]!;
  while (l.next[0]! !== NIL) {
    const opIdx = l.op[node]!;
    const op = ops[opIdx]!;
    if (l.match[node]! !== NIL) {
      const nextState = stepRegister(state, op);
      if (nextState !== undefined) {
        bits[opIdx >>> 5]! ^= 1 << (opIdx & 31);
        hash ^= zobrist[opIdx]!;
        if (memo.add(hash, bits, nextState)) {
          stack.push({ node, state });
          state = nextState;
          lift(l, node);
          node = l.next[0]!;
          continue;
        }
        bits[opIdx >>> 5]! ^= 1 << (opIdx & 31);
        hash ^= zobrist[opIdx]!;
      }
      node = l.next[node]!;
      continue;
    }
    // A return: operation opIdx must have taken effect by now and has not.
    if (best === undefined || stack.length > best.prefix.length) {
      best = describeStuck(l, stack, state, node);
    }
    const top = stack.pop();
    if (top === undefined) return best;
    const topOp = l.op[top.node]!;
    bits[topOp >>> 5]! ^= 1 << (topOp & 31);
    hash ^= zobrist[topOp]!;
    state = top.state;
    unlift(l, top.node);
    node = l.next[top.node]!;
  }
  return { ok: true };
}

function describeStuck(
  l: EventList,
  stack: readonly { node: number }[],
  state: RegisterState,
  retNode: number,
): Extract<SearchResult, { ok: false }> {
  const candidates: number[] = [];
  for (let n = l.next[0]!; n !== NIL && n !== retNode; n = l.next[n]!) {
    if (l.match[n]! !== NIL) candidates.push(l.op[n]!);
  }
  return {
    ok: false,
    prefix: stack.map((s) => l.op[s.node]!),
    state,
    blocked: l.op[retNode]!,
    candidates,
  };
}
