/**
 * The proposal envelope: how a member recognises its own proposals among applied entries.
 *
 * The core does not say at which index a proposal lands (it may be forwarded to a leader,
 * reordered with other members' proposals, or lost in a leader change). So the driver
 * wraps each command as
 *
 *   [version 1][token: 8 bytes][seq: uvarint][command bytes]
 *
 * where `token` is random per driver instance and `seq` counts its proposals. When an
 * entry is applied, a matching token means "mine": the waiter for `seq` is resolved with
 * the entry's index and term. Every member strips the envelope before the application
 * sees the command, so the application's bytes are exactly what was proposed. An empty
 * entry is a new leader's no-op and has no envelope.
 *
 * Parsing works in place (no copies): this runs for every applied entry on every member.
 */
import { randomBytes } from 'node:crypto';
import { EtceteraError } from '../../errors.js';

const ENVELOPE_V1 = 1;
export const TOKEN_BYTES = 8;

export type Token = Uint8Array;

export function newToken(): Token {
  return new Uint8Array(randomBytes(TOKEN_BYTES));
}

export function wrap(token: Token, seq: number, command: Uint8Array): Uint8Array {
  const seqBytes = varintLength(seq);
  // From Node's shared slab for small sizes: one typed-array backing store per proposal
  // would be a GC-tracked allocation at tens of thousands per second.
  const out: Uint8Array = Buffer.allocUnsafe(1 + TOKEN_BYTES + seqBytes + command.length);
  out[0] = ENVELOPE_V1;
  out.set(token, 1);
  let pos = 1 + TOKEN_BYTES;
  let v = seq;
  while (v >= 0x80) {
    out[pos++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  out[pos++] = v;
  out.set(command, pos);
  return out;
}

/** The sequence number of an envelope, or -1 when `data` is not one. */
function readSeq(data: Uint8Array): { seq: number; end: number } {
  let seq = 0;
  let scale = 1;
  for (let pos = 1 + TOKEN_BYTES; pos < data.length && pos < 1 + TOKEN_BYTES + 8; pos++) {
    const b = data[pos]!;
    seq += (b & 0x7f) * scale;
    if ((b & 0x80) === 0) return { seq, end: pos + 1 };
    scale *= 0x80;
  }
  return { seq: -1, end: -1 };
}

/**
 * Opens an envelope: the command (a view into `data`, which is immutable) and, when the
 * token is `own`, the sequence number (otherwise -1). ERR_CORRUPT if `data` is not an
 * envelope: every non-empty normal entry must be one.
 */
export function open(data: Uint8Array, own: Token): { command: Uint8Array; ownSeq: number } {
  const { seq, end } = data[0] === ENVELOPE_V1 ? readSeq(data) : { seq: -1, end: -1 };
  if (end < 0) throw new EtceteraError('ERR_CORRUPT', { detail: 'raft entry without an envelope' });
  let mine = true;
  for (let i = 0; i < TOKEN_BYTES; i++) {
    if (data[1 + i] !== own[i]) {
      mine = false;
      break;
    }
  }
  return { command: data.subarray(end), ownSeq: mine ? seq : -1 };
}

function varintLength(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 0x80);
    n++;
  }
  return n;
}
