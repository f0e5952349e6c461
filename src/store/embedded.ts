/**
 * The embedded face of the store: what a Node program uses with no HTTP and no Raft.
 *
 *   const store = await open({ dir: './data' });
 *   await store.put('greeting', 'hello');
 *   const kv = await store.get('greeting');
 *   const off = store.subscribe((batch) => console.log(batch.revision, batch.events));
 *   await store.close();
 *
 * Keys and values may be strings (UTF-8) or bytes. Writes from one event-loop turn are
 * grouped into one durable write. Leases expire on their own: the store checks them on a
 * timer and revokes the expired ones through the same path as any write.
 */

import { EtceteraError } from '../errors.js';
import { prefixEnd, utf8ToBytes } from '../wire/bytes.js';
import { Store, type StoreOptions } from './store.js';
import type {
  Bytes,
  DeleteRangeResult,
  KeyValue,
  LeaseGrantResult,
  LeaseId,
  LeaseTimeToLive,
  PutResult,
  RangeRequest,
  RangeResult,
  Revision,
  TxnRequest,
  TxnResult,
} from './types.js';

export type KeyLike = string | Bytes;

export function toBytes(k: KeyLike): Uint8Array {
  return typeof k === 'string' ? utf8ToBytes(k) : k;
}

export interface EmbeddedOptions extends StoreOptions {
  /** How often expired leases are looked for, in ms. 0 turns the check off. Default 500. */
  leaseCheckIntervalMs?: number;
}

export interface PutOptions {
  lease?: number;
  prevKv?: boolean;
  ignoreValue?: boolean;
  ignoreLease?: boolean;
}

export interface DeleteOptions {
  /** Delete [key, rangeEnd) instead of one key. */
  rangeEnd?: KeyLike;
  /** Delete every key starting with `key`. */
  prefix?: boolean;
  prevKv?: boolean;
}

export class EmbeddedStore extends Store {
  private leaseTimer: NodeJS.Timeout | undefined;

  static async openEmbedded(options: EmbeddedOptions): Promise<EmbeddedStore> {
    const store = new EmbeddedStore(await Store.prepare(options));
    const every = options.leaseCheckIntervalMs ?? 500;
    if (every > 0) {
      store.leaseTimer = setInterval(
        () => void store.revokeExpired().catch(() => undefined),
        every,
      );
      store.leaseTimer.unref();
    }
    return store;
  }

  async put(key: KeyLike, value: KeyLike, options: PutOptions = {}): Promise<PutResult> {
    const r = await this.submit({
      op: 'put',
      key: toBytes(key),
      value: toBytes(value),
      ...options,
    });
    return (r as Extract<typeof r, { op: 'put' }>).result;
  }

  /** The current (or, with `revision`, a past) version of one key. */
  async get(key: KeyLike, options: { revision?: number } = {}): Promise<KeyValue | undefined> {
    const r = await this.range({ key: toBytes(key), ...options });
    return r.kvs[0];
  }

  /** Every key with this prefix (etcd's --prefix), with any other range options. */
  getPrefix(
    prefix: KeyLike,
    options: Omit<RangeRequest, 'key' | 'rangeEnd'> = {},
  ): Promise<RangeResult> {
    const key = toBytes(prefix);
    return this.range({ key, rangeEnd: prefixEnd(key), ...options });
  }

  async delete(key: KeyLike, options: DeleteOptions = {}): Promise<DeleteRangeResult> {
    const k = toBytes(key);
    const rangeEnd = options.prefix
      ? prefixEnd(k)
      : options.rangeEnd !== undefined
        ? toBytes(options.rangeEnd)
        : undefined;
    const r = await this.submit({ op: 'deleteRange', key: k, rangeEnd, prevKv: options.prevKv });
    return (r as Extract<typeof r, { op: 'deleteRange' }>).result;
  }

  async txn(request: TxnRequest): Promise<TxnResult> {
    const r = await this.submit({ op: 'txn', ...request });
    return (r as Extract<typeof r, { op: 'txn' }>).result;
  }

  async compact(revision: number): Promise<{ revision: Revision }> {
    const r = await this.submit({ op: 'compact', revision });
    return (r as Extract<typeof r, { op: 'compact' }>).result;
  }

  /** Grants a lease of `ttl` seconds; `id` 0 or absent lets the store choose one. */
  async leaseGrant(ttl: number, id = 0): Promise<LeaseGrantResult> {
    const chosen = id === 0 ? this.lessor.chooseId() : id;
    const r = await this.submit({ op: 'leaseGrant', id: chosen, ttl });
    return (r as Extract<typeof r, { op: 'leaseGrant' }>).result;
  }

  async leaseRevoke(id: number): Promise<{ revision: Revision }> {
    const r = await this.submit({ op: 'leaseRevoke', id });
    return (r as Extract<typeof r, { op: 'leaseRevoke' }>).result;
  }

  /** Renews a lease; throws ERR_LEASE_NOT_FOUND when it does not exist. */
  leaseRenew(id: number): number {
    const ttl = this.lessor.keepAlive(id);
    if (ttl === undefined) throw new EtceteraError('ERR_LEASE_NOT_FOUND');
    return ttl;
  }

  leaseTimeToLive(id: number, options: { keys?: boolean } = {}): LeaseTimeToLive {
    return this.lessor.timeToLive(id, options.keys === true);
  }

  leases(): LeaseId[] {
    return this.lessor.ids();
  }

  /** Revokes every expired lease (the timer calls this; tests with a fake clock may too). */
  async revokeExpired(): Promise<LeaseId[]> {
    const expired = this.lessor.expired();
    const revoked: LeaseId[] = [];
    for (const id of expired) {
      try {
        await this.leaseRevoke(id);
        revoked.push(id);
      } catch (e) {
        if (!(e instanceof EtceteraError && e.code === 'ERR_LEASE_NOT_FOUND')) throw e;
      }
    }
    return revoked;
  }

  override async close(): Promise<void> {
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    await super.close();
  }
}

/** Opens (or creates) a store in `options.dir`. */
export function open(options: EmbeddedOptions): Promise<EmbeddedStore> {
  return EmbeddedStore.openEmbedded(options);
}
