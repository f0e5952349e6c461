/**
 * The wire form of a command, for the Raft log and for anything else that must carry one
 * between processes: JSON in which every byte string becomes {"$b": "<base64>"}. Encoding
 * is deterministic (same command, same bytes) so that every member logs the same entry.
 * Decoding checks only the outer shape; apply runs the full request checks.
 */
import { EtceteraError } from '../errors.js';
import type { Command } from './types.js';

const OPS = new Set([
  'put',
  'deleteRange',
  'txn',
  'compact',
  'leaseGrant',
  'leaseRevoke',
  'alarm',
  'auth',
  'noop',
]);

export function encodeCommand(c: Command): Uint8Array {
  // Look at the holder's own value, not `v`: JSON.stringify has already turned a Buffer into
  // {type: 'Buffer', data} through its toJSON by the time the replacer sees it.
  const json = JSON.stringify(c, function (this: Record<string, unknown>, k, v) {
    const own = this[k];
    return own instanceof Uint8Array
      ? { $b: Buffer.from(own.buffer, own.byteOffset, own.byteLength).toString('base64') }
      : v;
  });
  return new Uint8Array(Buffer.from(json, 'utf8'));
}

export function decodeCommand(b: Uint8Array): Command {
  let parsed: unknown;
  try {
    parsed = JSON.parse(
      Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8'),
      (_k, v) =>
        v !== null &&
        typeof v === 'object' &&
        typeof v.$b === 'string' &&
        Object.keys(v).length === 1
          ? new Uint8Array(Buffer.from(v.$b, 'base64'))
          : v,
    );
  } catch (e) {
    throw new EtceteraError('ERR_CORRUPT', { detail: 'command is not JSON' }, { cause: e });
  }
  const op = (parsed as { op?: unknown } | null)?.op;
  if (typeof op !== 'string' || !OPS.has(op))
    throw new EtceteraError('ERR_CORRUPT', { detail: 'unknown command' });
  return parsed as Command;
}
