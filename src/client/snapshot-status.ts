/**
 * `snapshot status` of a snapshot file (etcd's or etcetera's: both are bbolt databases in
 * etcd's bucket layout, plus the stream's SHA-256 trailer when saved from a member). As
 * etcdctl, it reports the CRC-32C (Castagnoli) of every top-level bucket name, key and value
 * in key order (a nested bucket adds its name only), the main revision of the last key in
 * the "key" bucket, the number of keys and the database size. The file is read through
 * src/bbolt/reader.ts, page by page with every offset checked, and a trailer that is present
 * must match: a damaged or cut file gives ERR_BOLT_CORRUPT or ERR_BOLT_TRUNCATED rather than
 * nonsense.
 */
import { crc32c } from '@node-rs/crc32';
import { BoltReader } from '../bbolt/reader.js';

export interface SnapshotStatus {
  hash: number;
  revision: number;
  totalKey: number;
  totalSize: number;
}

/** The status of the snapshot (bbolt database) in `file`. */
export async function snapshotStatus(file: string): Promise<SnapshotStatus> {
  const reader = await BoltReader.open(file);
  try {
    let crc = 0;
    let revision = 0;
    let totalKey = 0;
    for await (const top of reader.entries()) {
      crc = crc32c(top.key, crc);
      if (top.bucket === undefined) continue; // bbolt's ForEach hands such a key no bucket
      const isKey = top.key.toString('latin1') === 'key';
      for await (const e of reader.entries(top.bucket)) {
        crc = crc32c(e.key, crc);
        if (e.value !== undefined) crc = crc32c(e.value, crc);
        // etcd's "key" bucket is keyed by revision: 8 bytes of main revision, big-endian.
        if (isKey && e.key.length >= 8) revision = Number(e.key.readBigUInt64BE(0));
        totalKey++;
      }
    }
    return { hash: crc >>> 0, revision, totalKey, totalSize: reader.size };
  } finally {
    await reader.close();
  }
}
