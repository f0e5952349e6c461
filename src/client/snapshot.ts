/**
 * Saving a member's snapshot to a file, as `etcdctl snapshot save` does: the stream goes to
 * `<file>.part`, is fsynced and renamed into place only once complete. etcd (and etcetera)
 * end the stream with a 32-byte trailer, the SHA-256 of every byte before it; it is checked
 * while the bytes stream, and a file whose trailer does not match is removed, not saved.
 * The saved file keeps the trailer, as etcdctl's does (`snapshot restore` checks it again).
 */
import { createHash } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { EtceteraError } from '../errors.js';

const TRAILER = 32;

export interface SavedSnapshot {
  /** Bytes written, trailer included. */
  size: number;
  /** The SHA-256 the trailer carried (hex). */
  sha256: string;
}

/**
 * Writes `chunks` to `file` (through `<file>.part`) and checks the trailer. Rejects with
 * ERR_SNAPSHOT_INTEGRITY when it is missing or wrong; the stream's own errors pass through.
 */
export async function saveSnapshot(
  chunks: AsyncIterable<Uint8Array>,
  file: string,
  /** Called after each chunk is written, with the bytes received so far (a progress bar). */
  onBytes?: (received: number) => void,
): Promise<SavedSnapshot> {
  const part = `${file}.part`;
  const out = await open(part, 'w', 0o600);
  const hash = createHash('sha256');
  let tail: Buffer = Buffer.alloc(0);
  let size = 0;
  try {
    for await (const chunk of chunks) {
      await out.write(chunk);
      size += chunk.length;
      onBytes?.(size);
      const joined = Buffer.concat([tail, chunk]);
      const cut = Math.max(0, joined.length - TRAILER);
      hash.update(joined.subarray(0, cut));
      tail = joined.subarray(cut);
    }
    if (tail.length < TRAILER) {
      throw new EtceteraError('ERR_SNAPSHOT_INTEGRITY', {
        detail: `the stream ended after ${size} bytes, without a SHA-256 trailer`,
      });
    }
    const computed = hash.digest('hex');
    const sent = tail.toString('hex');
    if (computed !== sent) {
      throw new EtceteraError('ERR_SNAPSHOT_INTEGRITY', {
        detail: `sha256 of the data is ${computed}, the trailer says ${sent}`,
      });
    }
    await out.sync();
    await out.close();
    await rename(part, file);
    return { size, sha256: sent };
  } catch (e) {
    await out.close().catch(() => undefined);
    await rm(part, { force: true });
    throw e;
  }
}
