/**
 * Small pure helpers shared by the core: entry sizes, size-capped slicing, comparison of
 * byte contexts.
 */
import { ByteSize, type Entry, PayloadSize } from './types.js';

/**
 * Bytes an entry occupies in a message: its payload plus a fixed allowance for term, index
 * and type. The allowance makes empty entries (no-ops) count, so a budget of N bytes can
 * never admit an unbounded number of them.
 */
export const ENTRY_OVERHEAD = 24;

export function entrySize(e: Entry): ByteSize {
  return ByteSize(e.data.length + ENTRY_OVERHEAD);
}

export function entriesSize(ents: readonly Entry[]): ByteSize {
  let n = 0;
  for (const e of ents) n += e.data.length + ENTRY_OVERHEAD;
  return ByteSize(n);
}

export function payloadSize(ents: readonly Entry[]): PayloadSize {
  let n = 0;
  for (const e of ents) n += e.data.length;
  return PayloadSize(n);
}

/**
 * The longest prefix of `ents` whose total size stays within `maxBytes`, but always at
 * least one entry (progress must be possible even with an entry larger than the budget).
 * `maxBytes` undefined: no limit.
 */
export function limitSize<T extends Entry>(ents: T[], maxBytes: ByteSize | undefined): T[] {
  if (maxBytes === undefined || ents.length <= 1) return ents;
  let size = 0;
  for (let i = 0; i < ents.length; i++) {
    size += entrySize(ents[i]!);
    if (size > maxBytes) return ents.slice(0, Math.max(1, i));
  }
  return ents;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A string key for a byte context (maps keyed by read-index context). */
export function contextKey(ctx: Uint8Array): string {
  let s = '';
  for (const b of ctx) s += b.toString(16).padStart(2, '0');
  return s;
}

export const EMPTY_BYTES: Uint8Array = new Uint8Array(0);

/**
 * Stop on a broken invariant. These are bugs (in the core or in a driver that broke the
 * Ready contract), never bad network input: continuing could lose committed data.
 */
export function invariant(cond: boolean, what: string): asserts cond {
  if (!cond) throw new Error(`raft invariant violated: ${what}`);
}
