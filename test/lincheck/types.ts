/**
 * The client history a linearizability check takes, as the Raft simulator records it.
 *
 * The model is a map of registers, one per key, each initially absent (`null`). A `put`
 * writes a register; a `get` reads one. Times are on any one clock shared by all clients
 * (the simulator's virtual clock); only their order matters.
 */

export type KvOp = { kind: 'put'; key: string; value: string } | { kind: 'get'; key: string };

export interface HistoryOp {
  /** The client that issued the operation; one client's operations never overlap. */
  client: number;
  op: KvOp;
  /** When the client invoked the operation. */
  call: number;
  /**
   * When the client saw its outcome; `Infinity` when it never did. An operation whose
   * outcome is unknown (`ok: false`) is treated as returning at `Infinity` whatever this
   * says, since a timed-out proposal can still commit later.
   */
  ret: number;
  /** false = unknown outcome: the operation may or may not have taken effect. */
  ok: boolean;
  /** The result of a successful get; `null` = the key was absent. Ignored for puts. */
  output?: string | null;
}

export type CheckResult = { ok: true } | { ok: false; key: string; explanation: string };

/** A register value: `null` while the key is absent. */
export type RegisterState = string | null;
