/**
 * Bytes and their string forms, shared by the server faces, the store, the watch cache and
 * the client.
 *
 * etcd keys and values are bytes. Two string forms of them exist here and they are not
 * interchangeable:
 *
 * - latin1, one UTF-16 code unit per byte (`bytesToLatin1`, `latin1ToBytes`): exact for any
 *   bytes, and `<` on two such strings is byte order. For keys held as strings in maps and
 *   sorted structures (the store's key index, the watch cache).
 * - UTF-8 text (`utf8ToBytes`, `bytesToUtf8`): what a person types (CLI arguments, Kubernetes
 *   names and paths). Not every byte string is UTF-8, so bytes → text is for display and for
 *   keys that were written as text.
 *
 * etcd's JSON API carries bytes as standard base64 (`toBase64`, `fromBase64`).
 */

const encoder = new TextEncoder();

function buffer(b: Uint8Array): Buffer {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/** The latin1 string of some bytes: one char per byte, so string order is byte order. */
export function bytesToLatin1(b: Uint8Array): string {
  return buffer(b).toString('latin1');
}

/** The bytes of a latin1 string (the inverse of `bytesToLatin1`). */
export function latin1ToBytes(s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s, 'latin1'));
}

/** The UTF-8 bytes of a text. */
export function utf8ToBytes(s: string): Uint8Array {
  return encoder.encode(s);
}

/** Bytes read as UTF-8 text (invalid sequences become U+FFFD). */
export function bytesToUtf8(b: Uint8Array): string {
  return buffer(b).toString('utf8');
}

/** Standard base64 with padding, as etcd's JSON API prints bytes. */
export function toBase64(b: Uint8Array): string {
  return buffer(b).toString('base64');
}

/**
 * Base64 to bytes, leniently (Node's decoder: it skips what is not base64). For answers of a
 * server; a server checking a request uses the strict decoder of its face.
 */
export function fromBase64(s: string | undefined): Uint8Array {
  if (s === undefined || s === '') return new Uint8Array(0);
  const buf = Buffer.from(s, 'base64');
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

/**
 * The range_end that covers every key starting with `prefix`: the prefix with trailing 0xff
 * bytes dropped and its last byte incremented. A prefix that is empty or all 0xff has no such
 * end; it gets "\0", which etcd reads as "every key >= key" (as `--from-key` sends).
 * Returns a new Uint8Array; `prefix` (a Buffer too) is not changed.
 */
export function prefixEnd(prefix: Uint8Array): Uint8Array {
  for (let i = prefix.length - 1; i >= 0; i--) {
    const b = prefix[i] as number;
    if (b < 0xff) {
      // A copy, not prefix.slice: on a Buffer, slice is a view and would change the prefix.
      const end = Uint8Array.from(prefix.subarray(0, i + 1));
      end[i] = b + 1;
      return end;
    }
  }
  return Uint8Array.of(0);
}
