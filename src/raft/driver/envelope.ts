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
 */
import { randomBytes } from 'node:crypto';
import { EtceteraError } from '../../errors.js';
import { Reader, Writer } from './wire.js';

const ENVELOPE_V1 = 1;
export const TOKEN_BYTES = 8;

export type Token = Uint8Array;

export function newToken(): Token {
  return new Uint8Array(randomBytes(TOKEN_BYTES));
}

export function wrap(token: Token, seq: number, command: Uint8Array): Uint8Array {
  return new Writer(command.length + 20)
    .u8(ENVELOPE_V1)
    .raw(token)
    .uvarint(seq)
    .raw(command)
    .finish();
}

export interface Unwrapped {
  token: Token;
  seq: number;
  command: Uint8Array;
}

/** Opens an envelope; ERR_CORRUPT if `data` is not one (every normal entry must be). */
export function unwrap(data: Uint8Array): Unwrapped {
  try {
    const r = new Reader(data);
    const version = r.u8();
    if (version !== ENVELOPE_V1) throw new Error(`unknown envelope version ${version}`);
    const token = r.raw(TOKEN_BYTES);
    const seq = r.uvarint();
    return { token, seq, command: r.raw(r.remaining) };
  } catch (cause) {
    throw new EtceteraError('ERR_CORRUPT', { detail: 'raft entry without an envelope' }, { cause });
  }
}

export function sameToken(a: Token, b: Token): boolean {
  for (let i = 0; i < TOKEN_BYTES; i++) if (a[i] !== b[i]) return false;
  return true;
}
