/**
 * The payload of a normal Raft entry as this member writes it:
 *
 *   [kind: u8][body]
 *
 * kind 3 (command): body = a store command (src/store/codec.ts); applied to the store.
 * kind 4 (attributes): body = JSON {id, name, clientURLs}: a member announcing itself after
 *   it starts (etcd's "publish"); applied to the member registry.
 * kind 5 (peer URLs): body = JSON {id, peerURLs}: a member's new peer URLs (etcd's
 *   MemberUpdate, a conf change of type UpdateNode there); applied to the member registry on
 *   every member, after which each member's transport dials the new URLs. A member that
 *   does not know the kind applies it as a no-op.
 *
 * The proposer needs nothing in the payload to find its waiting client: the driver's
 * envelope says which proposal an entry is, and apply's outcome travels back through it.
 * Logs written by etcetera 0.1 carry kinds 1 and 2 with an 8-byte request ID after the
 * kind; they are still read (the ID is skipped), so an old data dir replays as it was.
 */
import { EtceteraError } from '../errors.js';

export const EntryKind = { COMMAND: 3, ATTRIBUTES: 4, PEER_URLS: 5 } as const;
export type EntryKind = (typeof EntryKind)[keyof typeof EntryKind];

/** The kinds of etcetera 0.1 and the request ID that followed them. */
const LEGACY: Readonly<Record<number, EntryKind>> = {
  1: EntryKind.COMMAND,
  2: EntryKind.ATTRIBUTES,
};
const LEGACY_HEADER = 9;

export interface DecodedEntry {
  kind: EntryKind;
  body: Uint8Array;
}

export function encodeEntry(kind: EntryKind, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(1 + body.length);
  out[0] = kind;
  out.set(body, 1);
  return out;
}

export function decodeEntry(data: Uint8Array): DecodedEntry {
  const first = data[0];
  if (
    first === EntryKind.COMMAND ||
    first === EntryKind.ATTRIBUTES ||
    first === EntryKind.PEER_URLS
  )
    return { kind: first, body: data.subarray(1) };
  const legacy = first === undefined ? undefined : LEGACY[first];
  if (legacy !== undefined && data.length >= LEGACY_HEADER)
    return { kind: legacy, body: data.subarray(LEGACY_HEADER) };
  throw new EtceteraError('ERR_CORRUPT', { detail: 'unknown entry kind' });
}
