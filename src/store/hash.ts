/**
 * A deterministic hash of the keyspace as of one revision (what etcd's HashKV answers): every
 * live key at that revision, in key order, with its create/mod revision, version, lease and
 * value. Members that applied the same log give the same hash at the same revision whatever
 * their physical compaction has removed, so operators can compare members (etcdctl endpoint
 * hashkv). SHA-256 over a length-prefixed encoding, truncated to 32 bits (etcd's field is a
 * uint32); it is not etcd's CRC and is meant for comparing etcetera members with each other.
 */
import { createHash } from 'node:crypto';
import { EtceteraError } from '../errors.js';
import type { Store } from './store.js';

export interface KeyspaceHash {
  hash: number;
  /** The revision hashed (the current one when 0 was asked). */
  revision: number;
  /** The store's compaction revision when the hash began (-1: never compacted). */
  compactRevision: number;
}

const ALL = { key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]) };

export async function hashKeyspace(store: Store, revision: number): Promise<KeyspaceHash> {
  const current = store.currentRevision as number;
  const compactRevision = store.compactRevision as number;
  const rev = revision > 0 ? revision : current;
  if (rev > current) throw new EtceteraError('ERR_FUTURE_REV', { currentRevision: current });
  const h = createHash('sha256');
  const num = Buffer.alloc(8);
  const u64 = (n: number) => {
    num.writeBigUInt64BE(BigInt(n));
    h.update(num);
  };
  u64(rev);
  for await (const chunk of store.rangeStream({ ...ALL, revision: rev })) {
    for (const kv of chunk) {
      u64(kv.key.length);
      h.update(kv.key);
      u64(kv.createRevision);
      u64(kv.modRevision);
      u64(kv.version);
      u64(kv.lease);
      u64(kv.value.length);
      h.update(kv.value);
    }
  }
  return { hash: h.digest().readUInt32BE(0), revision: rev, compactRevision };
}
