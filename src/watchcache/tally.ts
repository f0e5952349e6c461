/**
 * Plain counters of a cacher's watchers for a live view (the member's dashboard): connections
 * and the watchers on them by kind (the face that opened them), watchers now over their soft
 * bound (slow, in their grace period) and watchers ended, by reason. Each is kept up to date
 * where the change happens (O(1) each time), so reading them costs O(kinds), never a walk of
 * the watchers.
 */
import type { Cancellation } from './types.js';

export interface KindTally {
  /** Connections of this kind open now. */
  connections: number;
  /** Watchers attached to those connections now. */
  watchers: number;
}

export type EndReason = Cancellation['reason'];

export class WatchTally {
  private readonly kinds = new Map<string, KindTally>();
  /** Watchers over their soft bound now (in their grace period, not yet cancelled). */
  slowNow = 0;
  /** Watchers ended since the cacher started, by reason. */
  readonly ended: Record<EndReason, number> = {
    CLIENT: 0,
    COMPACTED: 0,
    SLOW: 0,
    CLOSED: 0,
    FAILED: 0,
  };

  /** The live counters of `kind` (made on first use; a connection keeps the object). */
  kind(kind: string): KindTally {
    let t = this.kinds.get(kind);
    if (t === undefined) {
      t = { connections: 0, watchers: 0 };
      this.kinds.set(kind, t);
    }
    return t;
  }

  /** A copy of every kind's counters, in the order the kinds first appeared. */
  byKind(): { kind: string; connections: number; watchers: number }[] {
    return [...this.kinds].map(([kind, t]) => ({ kind, ...t }));
  }
}
