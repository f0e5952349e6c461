/**
 * Compare-and-swap writes of objects through the member (and so through Raft):
 *
 *   create  txn(create_revision(key) == 0 [, mod_revision(namespace) == seen] → put)
 *   update  txn(mod_revision(key) == resourceVersion → put)
 *   delete  txn(mod_revision(key) == resourceVersion → delete)
 *
 * A failed compare changes nothing and is reported as such; the caller decides between
 * 409 and a retry. Reads of single objects go to the member (linearizable), not the cache.
 */

import { keyBytes } from '../../k8s/keys.js';
import { decodeStored, encodeStored } from '../../k8s/meta.js';
import { StatusError } from '../../k8s/status.js';
import type { KubeObject } from '../../k8s/types.js';
import type { MemberApi } from '../../server/types.js';
import type { Compare, KeyValue, TxnResult } from '../../store/types.js';

export interface Stored {
  obj: KubeObject;
  modRevision: number;
  kv: KeyValue;
}

export type WriteOutcome =
  | { ok: true; revision: number }
  | { ok: false; current: Stored | undefined };

/** A namespace guard: the create is atomic with the namespace state it was checked against. */
export interface Guard {
  key: string;
  modRevision: number;
}

function decodeKv(kv: KeyValue): Stored {
  try {
    return { obj: decodeStored(kv), modRevision: kv.modRevision, kv };
  } catch (e) {
    throw new StatusError('InternalError', `the stored object could not be decoded: ${String(e)}`);
  }
}

export class ObjectStorage {
  constructor(private readonly member: MemberApi) {}

  /** The current object at `key` (linearizable read). */
  async get(key: string): Promise<Stored | undefined> {
    const { result } = await this.member.range({ key: keyBytes(key) });
    const kv = result.kvs[0];
    return kv ? decodeKv(kv) : undefined;
  }

  /** The member's current revision, through a linearizable read (for consistent lists). */
  async currentRevision(): Promise<number> {
    // One key that never exists: the read barrier is what matters, not the data.
    const { result } = await this.member.range({ key: keyBytes('/registry/'), countOnly: true });
    return result.revision;
  }

  private async txn(
    compare: Compare[],
    key: string,
    put: Uint8Array | undefined,
  ): Promise<WriteOutcome> {
    const k = keyBytes(key);
    const op = put
      ? { type: 'put' as const, request: { key: k, value: put } }
      : { type: 'deleteRange' as const, request: { key: k } };
    const { result } = await this.member.write({
      op: 'txn',
      compare,
      success: [op],
      failure: [{ type: 'range', request: { key: k } }],
    });
    const txn = (result as { op: 'txn'; result: TxnResult }).result;
    if (txn.succeeded) return { ok: true, revision: txn.revision };
    const first = txn.responses[0];
    const kv = first?.type === 'range' ? first.response.kvs[0] : undefined;
    return { ok: false, current: kv ? decodeKv(kv) : undefined };
  }

  /** `extra`: further compares the create must hold (what a kind's hook read). */
  create(
    key: string,
    obj: KubeObject,
    guard?: Guard,
    extra: Compare[] = [],
  ): Promise<WriteOutcome> {
    const compare: Compare[] = [
      { key: keyBytes(key), target: 'CREATE', result: 'EQUAL', createRevision: 0 },
      ...extra,
    ];
    if (guard) {
      compare.push({
        key: keyBytes(guard.key),
        target: 'MOD',
        result: 'EQUAL',
        modRevision: guard.modRevision,
      });
    }
    return this.txn(compare, key, encodeStored(obj));
  }

  update(
    key: string,
    obj: KubeObject,
    modRevision: number,
    extra: Compare[] = [],
  ): Promise<WriteOutcome> {
    return this.txn(
      [{ key: keyBytes(key), target: 'MOD', result: 'EQUAL', modRevision }, ...extra],
      key,
      encodeStored(obj),
    );
  }

  delete(key: string, modRevision: number): Promise<WriteOutcome> {
    return this.txn(
      [{ key: keyBytes(key), target: 'MOD', result: 'EQUAL', modRevision }],
      key,
      undefined,
    );
  }

  /** Deletes every key under each prefix, in txns of at most `perTxn` ranges. */
  async deletePrefixes(
    prefixes: string[],
    prefixEnd: (p: string) => Uint8Array,
    perTxn = 64,
  ): Promise<void> {
    for (let i = 0; i < prefixes.length; i += perTxn) {
      const chunk = prefixes.slice(i, i + perTxn);
      await this.member.write({
        op: 'txn',
        compare: [],
        success: chunk.map((p) => ({
          type: 'deleteRange' as const,
          request: { key: keyBytes(p), rangeEnd: prefixEnd(p) },
        })),
        failure: [],
      });
    }
  }

  /** A range of objects from the store at `revision` (0 = current): the paging path. */
  async range(
    prefixKey: string,
    after: string | undefined,
    end: Uint8Array,
    revision: number,
    limit: number,
  ): Promise<{ items: Stored[]; revision: number; more: boolean }> {
    const start = after !== undefined ? keyBytes(`${after}\0`) : keyBytes(prefixKey);
    const { result } = await this.member.range({ key: start, rangeEnd: end, revision, limit });
    return { items: result.kvs.map(decodeKv), revision: result.revision, more: result.more };
  }
}
