/** Small builders shared by the raft unit tests. */
import { type Entry, EntryType, LogIndex, Term } from '../../src/raft/types.js';

export const I = LogIndex;
export const T = Term;
export const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
export const dec = (b: Uint8Array): string => new TextDecoder().decode(b);

/** An entry at (index, term), payload `data` (default: empty). */
export function ent(index: number, term: number, data = ''): Entry {
  return { index: I(index), term: T(term), type: EntryType.Normal, data: enc(data) };
}

/** Entries with the given terms at indexes from, from+1, ... */
export function ents(from: number, terms: number[]): Entry[] {
  return terms.map((t, k) => ent(from + k, t));
}

export const termsOf = (es: readonly Entry[]): number[] => es.map((e) => e.term);
export const indexesOf = (es: readonly Entry[]): number[] => es.map((e) => e.index);
