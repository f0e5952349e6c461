/**
 * The safety oracle, fed by the simulator as things happen. Each check throws a
 * SimViolation naming the property; the simulator turns it into a failed seed.
 *
 *   election safety      — at most one leader per term
 *   log matching         — entries with equal (index, term) are equal, and so are the
 *                          logs up to them (checked on persist, and pairwise periodically)
 *   leader completeness  — a new leader's log holds every entry known committed
 *   state machine safety — no two members apply different entries at one index
 *   acknowledged writes  — at the end, every acknowledged put is in the committed log and
 *                          applied on every member (checked by the world)
 */

import type { Raft } from '../../../src/raft/raft.js';
import type { MemoryStorage } from '../../../src/raft/storage/memory-storage.js';
import { type Entry, LogIndex } from '../../../src/raft/types.js';

export class SimViolation extends Error {
  override readonly name = 'SimViolation';
}

const decoder = new TextDecoder();
const sigs = new WeakMap<Uint8Array, string>();

/** An entry's content as a string (cached per byte array: members share entry objects). */
function sig(e: Entry): string {
  let s = sigs.get(e.data);
  if (s === undefined) {
    s = decoder.decode(e.data);
    sigs.set(e.data, s);
  }
  return e.type === 'confChange' ? `conf:${s}` : s;
}

interface Known {
  readonly term: number;
  readonly sig: string;
}

export class SafetyChecker {
  /** term → leader id */
  private readonly leaders = new Map<number, number>();
  /** index * 2^24 + term → entry signature, for every entry ever persisted anywhere */
  private readonly persisted = new Map<number, string>();
  /** index → the entry applied there (so: committed) */
  readonly committed = new Map<number, Known>();
  maxCommitted = 0;

  /** How many (term, leader) pairs were seen. */
  get leaderCount(): number {
    return this.leaders.size;
  }

  /** Call whenever a member may have changed role. */
  observeRole(id: number, r: Raft): void {
    if (r.role !== 'leader') return;
    const prev = this.leaders.get(r.term);
    if (prev === id) return;
    if (prev !== undefined) {
      throw new SimViolation(`election safety: ${prev} and ${id} both lead term ${r.term}`);
    }
    this.leaders.set(r.term, id);
    this.checkLeaderCompleteness(id, r);
  }

  private checkLeaderCompleteness(id: number, r: Raft): void {
    const last = r.log.lastIndex();
    if (this.maxCommitted > last) {
      throw new SimViolation(
        `leader completeness: leader ${id} (term ${r.term}) ends at ${last}, but ${this.maxCommitted} is committed`,
      );
    }
    for (let i = Math.max(1, r.log.firstIndex()); i <= this.maxCommitted; i++) {
      const k = this.committed.get(i);
      const t = r.log.term(LogIndex(i));
      if (k !== undefined && t !== k.term) {
        throw new SimViolation(
          `leader completeness: leader ${id} (term ${r.term}) has term ${t} at ${i}, committed term ${k.term}`,
        );
      }
    }
  }

  /** Entries a member just made durable. */
  onPersist(id: number, entries: readonly Entry[]): void {
    for (const e of entries) {
      const key = e.index * 16_777_216 + e.term;
      const s = sig(e);
      const prev = this.persisted.get(key);
      if (prev === undefined) this.persisted.set(key, s);
      else if (prev !== s) {
        throw new SimViolation(
          `log matching: member ${id} persisted a different entry at ${e.term}/${e.index}`,
        );
      }
    }
  }

  /** An entry a member applied to its state machine. */
  onApply(id: number, e: Entry): void {
    const k = this.committed.get(e.index);
    if (k === undefined) {
      this.committed.set(e.index, { term: e.term, sig: sig(e) });
      if (e.index > this.maxCommitted) this.maxCommitted = e.index;
    } else if (k.term !== e.term || k.sig !== sig(e)) {
      throw new SimViolation(
        `state machine safety: member ${id} applied ${e.term}/${e.index}, another applied ${k.term}/${e.index}`,
      );
    }
  }

  /** Pairwise log matching over durable logs: equal (index, term) → equal prefixes. */
  checkLogsMatch(logs: ReadonlyArray<{ id: number; storage: MemoryStorage }>): void {
    for (let a = 0; a < logs.length; a++) {
      for (let b = a + 1; b < logs.length; b++) this.checkPair(logs[a]!, logs[b]!);
    }
  }

  private checkPair(
    a: { id: number; storage: MemoryStorage },
    b: { id: number; storage: MemoryStorage },
  ): void {
    const sa = a.storage;
    const sb = b.storage;
    const lo = Math.max(sa.firstIndex(), sb.firstIndex());
    let i = Math.min(sa.lastIndex(), sb.lastIndex());
    while (i >= lo && sa.term(LogIndex(i)) !== sb.term(LogIndex(i))) i--;
    if (i < lo) return;
    const ea = sa.entries(LogIndex(lo), LogIndex(i + 1));
    const eb = sb.entries(LogIndex(lo), LogIndex(i + 1));
    for (let k = 0; k < ea.length; k++) {
      if (ea[k]!.term !== eb[k]!.term || sig(ea[k]!) !== sig(eb[k]!)) {
        throw new SimViolation(
          `log matching: members ${a.id} and ${b.id} agree at ${i} but differ at ${ea[k]!.index}`,
        );
      }
    }
  }
}
