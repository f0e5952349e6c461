/**
 * The bytes of watch responses on the wire, written straight from an {@link EtcdFrame}'s
 * chunks (the shared encoded bytes and the per-watch splices) without concatenating them
 * first: one HTTP chunk's line, and a batch of RFC 6455 text messages.
 */
import type { EtcdFrame } from '../../../watchcache/encoders/etcd-json.js';

/** One response as one buffer: its chunks and the newline. */
export function responseLine(f: EtcdFrame): Buffer {
  const out = Buffer.allocUnsafe(f.bytes + 1);
  let at = 0;
  for (const c of f.chunks) at += c.copy(out, at);
  out[at] = 0x0a;
  return out;
}

/**
 * RFC 6455 final, unmasked text frames, one per frame, in one buffer. A server's frames are
 * unmasked, so each message is a 2-, 4- or 10-byte header and then its chunks, exactly what
 * ws.send writes. ws's own frame builder (`Sender.frame`) was tried here and measured slower
 * in the websocket fan-out bench: it frames one contiguous payload, so each frame's chunks
 * had to be concatenated first, and its header buffers joined after.
 */
export function wsTextMessages(frames: readonly EtcdFrame[]): Buffer {
  let total = 0;
  for (const f of frames) total += wsHeaderBytes(f.bytes) + f.bytes;
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const f of frames) {
    const n = f.bytes;
    out[at] = 0x81; // FIN, opcode 1 (text)
    if (n < 126) {
      out[at + 1] = n;
    } else if (n < 65_536) {
      out[at + 1] = 126;
      out.writeUInt16BE(n, at + 2);
    } else {
      out[at + 1] = 127;
      out.writeUInt32BE(Math.floor(n / 2 ** 32), at + 2);
      out.writeUInt32BE(n >>> 0, at + 6);
    }
    at += wsHeaderBytes(n);
    for (const c of f.chunks) at += c.copy(out, at);
  }
  return out;
}

function wsHeaderBytes(payloadBytes: number): number {
  return payloadBytes < 126 ? 2 : payloadBytes < 65_536 ? 4 : 10;
}
