/**
 * Test plumbing for the watch cache: one writable face over the two stores (the in-memory
 * double and the real LevelDB store), two watch implementations over them (the store directly,
 * and the cache), and helpers to read watch responses with a deadline.
 */

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Test } from 'tap';
import { open } from '../../src/store/index.js';
import type { EventBatch, Revision, WatchableStore } from '../../src/store/types.js';
import { Cacher } from '../../src/watchcache/cacher.js';
import { DirectWatch } from '../../src/watchcache/direct.js';
import type { WatchCacheOptions } from '../../src/watchcache/options.js';
import type { WatchClock, WatchOptions, WatchResponse } from '../../src/watchcache/types.js';
import { b, MemoryStore, type WriteOp } from './memory-store.js';

/** A store the tests can write to, plus every batch it has applied (the model history). */
export interface TestStore {
  readonly name: string;
  readonly store: WatchableStore;
  readonly log: EventBatch[];
  put(key: string, value: string): Promise<Revision>;
  del(key: string, rangeEnd?: string): Promise<Revision>;
  txn(ops: WriteOp[]): Promise<Revision>;
  compact(revision: number): Promise<void>;
  close(): Promise<void>;
}

export type StoreFactory = (t: Test) => Promise<TestStore>;

export const memoryStore: StoreFactory = async () => {
  const m = new MemoryStore();
  const log: EventBatch[] = [];
  m.subscribe((batch) => log.push(batch));
  return {
    name: 'memory',
    store: m,
    log,
    put: async (k, v) => m.put(k, v),
    del: async (k, e) => m.delete(k, e),
    txn: async (ops) => m.txn(ops),
    compact: async (r) => m.compact(r),
    close: async () => {},
  };
};

let levelDirs = 0;

/** A LevelDB store in a fresh directory under the test's t.testdir(). */
export const levelStore: StoreFactory = async (t) => {
  const dir = join(t.testdir(), `store-${++levelDirs}`);
  await mkdir(dir, { recursive: true });
  const s = await open({ dir, sync: false, leaseCheckIntervalMs: 0 });
  const log: EventBatch[] = [];
  s.subscribe((batch) => log.push(batch));
  const txn = async (ops: WriteOp[]): Promise<Revision> => {
    const success = ops.map((o) =>
      o.op === 'put'
        ? { type: 'put' as const, request: { key: b(o.key), value: b(o.value) } }
        : {
            type: 'deleteRange' as const,
            request: {
              key: b(o.key),
              rangeEnd: o.rangeEnd === undefined ? undefined : b(o.rangeEnd),
            },
          },
    );
    return (await s.txn({ compare: [], success, failure: [] })).revision;
  };
  return {
    name: 'level',
    store: s,
    log,
    put: async (k, v) => (await s.put(k, v)).revision,
    del: async (k, e) => (await s.delete(k, e === undefined ? {} : { rangeEnd: e })).revision,
    txn,
    compact: async (r) => {
      await s.compact(r);
    },
    close: () => s.close(),
  };
};

/** A watch as the conformance suite uses it. */
export interface WatchHandle extends AsyncIterator<WatchResponse> {
  cancel(): void;
  requestProgress(): void;
}

/** A watch implementation over a store. */
export interface WatchEnv {
  readonly name: string;
  readonly cacher?: Cacher;
  watch(opts: WatchOptions): WatchHandle;
  close(): void;
}

export type ImplFactory = (store: WatchableStore) => WatchEnv;

export const directImpl: ImplFactory = (store) => ({
  name: 'direct',
  watch: (opts) => new DirectWatch(store, opts),
  close: () => {},
});

export function cacheImpl(options: WatchCacheOptions = {}): ImplFactory {
  return (store) => {
    const cacher = new Cacher(store, options);
    return {
      name: 'cache',
      watch: (opts) => cacher.watchIterator(opts),
      close: () => cacher.close(),
      cacher,
    };
  };
}

/** Reads responses until `done(all)` holds; fails after `timeoutMs`. */
export async function readUntil(
  h: WatchHandle,
  done: (all: WatchResponse[]) => boolean,
  timeoutMs = 5000,
): Promise<WatchResponse[]> {
  const all: WatchResponse[] = [];
  const deadline = Date.now() + timeoutMs;
  while (!done(all)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`timed out after ${all.length} responses: ${describe(all)}`);
    let timer: NodeJS.Timeout | undefined;
    const r = await Promise.race([
      h.next(),
      new Promise<'timeout'>((res) => {
        timer = setTimeout(() => res('timeout'), left);
      }),
    ]);
    clearTimeout(timer);
    if (r === 'timeout')
      throw new Error(`timed out after ${all.length} responses: ${describe(all)}`);
    if (r.done) break;
    all.push(r.value);
  }
  return all;
}

/** Reads whatever arrives within `ms` (for "nothing more comes" checks). */
export async function readFor(h: WatchHandle, ms: number): Promise<WatchResponse[]> {
  const all: WatchResponse[] = [];
  const deadline = Date.now() + ms;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return all;
    let timer: NodeJS.Timeout | undefined;
    const r = await Promise.race([
      h.next(),
      new Promise<'timeout'>((res) => {
        timer = setTimeout(() => res('timeout'), left);
      }),
    ]);
    clearTimeout(timer);
    if (r === 'timeout' || r.done) return all;
    all.push(r.value);
  }
}

/** The events of responses, flattened to comparable strings "rev:TYPE:key=value[<prev]". */
export function eventStrings(rs: readonly WatchResponse[]): string[] {
  const out: string[] = [];
  for (const r of rs) {
    if (r.type !== 'events') continue;
    for (const ev of r.events) out.push(eventString(r.revision, ev));
  }
  return out;
}

export function eventString(
  revision: number,
  ev: {
    type: string;
    kv: { key: Uint8Array; value: Uint8Array };
    prevKv?: { value: Uint8Array; modRevision: number };
  },
): string {
  const k = Buffer.from(ev.kv.key).toString('latin1');
  const v = Buffer.from(ev.kv.value).toString('latin1');
  const prev = ev.prevKv
    ? `<${Buffer.from(ev.prevKv.value).toString('latin1')}@${ev.prevKv.modRevision}`
    : '';
  return `${revision}:${ev.type}:${k}=${v}${prev}`;
}

export function countEvents(rs: readonly WatchResponse[]): number {
  let n = 0;
  for (const r of rs) if (r.type === 'events') n += r.events.length;
  return n;
}

function describe(rs: readonly WatchResponse[]): string {
  return JSON.stringify(
    rs.map((r) =>
      r.type === 'events'
        ? `${r.revision}x${r.events.length}`
        : r.type === 'progress'
          ? `progress@${r.revision}`
          : `canceled:${r.cancellation.reason}`,
    ),
  );
}

/** A clock that only moves when told; timers fire as it passes them. */
export class FakeClock implements WatchClock {
  private t = 1_000_000;
  private timers: { at: number; fn: () => void; live: boolean }[] = [];
  now(): number {
    return this.t;
  }
  setTimer(fn: () => void, ms: number): () => void {
    const timer = { at: this.t + ms, fn, live: true };
    this.timers.push(timer);
    return () => {
      timer.live = false;
    };
  }
  advance(ms: number): void {
    const until = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.live && x.at <= until).sort((x, y) => x.at - y.at)[0];
      if (!due) break;
      this.t = due.at;
      due.live = false;
      due.fn();
    }
    this.t = until;
    this.timers = this.timers.filter((x) => x.live);
  }
}

/** Waits `n` event-loop turns. */
export async function turns(n = 1): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}
