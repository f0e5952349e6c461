/**
 * Store benchmark: `npm run bench:store [-- --keys 100000 --value 100]`
 *
 * Prints key writes/s for (a) batches of single-put commands, one fsync per batch, (b)
 * 1,000-put txns, one fsync per txn, (c) single puts awaited one by one (an fsync each);
 * range latency over a 100k-key keyspace; and the heap bytes the store holds per key.
 * Writes a JSON result with metadata to bench/results/.
 */
import { execSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as hdr from 'hdr-histogram-js';
import type { Command, RequestOp } from '../src/store/index.js';
import { open, prefixEnd, Store } from '../src/store/index.js';

const { values: args } = parseArgs({
  options: {
    keys: { type: 'string', default: '100000' },
    value: { type: 'string', default: '100' },
    batch: { type: 'string', default: '1000' },
  },
});
const KEYS = Number(args.keys);
const VALUE = Buffer.alloc(Number(args.value), 'v');
const BATCH = Number(args.batch);
const key = (i: number) => Buffer.from(`bench/${String(i).padStart(8, '0')}`);

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'etcetera-bench-'));
}

async function batchedPuts(): Promise<number> {
  const dir = tempDir();
  const store = await Store.open({ dir });
  const start = performance.now();
  let index = 0;
  for (let i = 0; i < KEYS; i += BATCH) {
    const entries = [];
    for (let j = i; j < Math.min(KEYS, i + BATCH); j++) {
      const command: Command = { op: 'put', key: key(j), value: VALUE };
      entries.push({ command, index: ++index });
    }
    await store.applyBatch(entries);
  }
  const secs = (performance.now() - start) / 1000;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return KEYS / secs;
}

async function txnPuts(): Promise<number> {
  const dir = tempDir();
  const store = await open({ dir, maxTxnOps: 1000, leaseCheckIntervalMs: 0 });
  const start = performance.now();
  for (let i = 0; i < KEYS; i += 1000) {
    const success: RequestOp[] = [];
    for (let j = i; j < Math.min(KEYS, i + 1000); j++)
      success.push({ type: 'put', request: { key: key(j), value: VALUE } });
    await store.txn({ compare: [], success, failure: [] });
  }
  const secs = (performance.now() - start) / 1000;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return KEYS / secs;
}

async function sequentialPuts(ms: number): Promise<number> {
  const dir = tempDir();
  const store = await open({ dir, leaseCheckIntervalMs: 0 });
  const start = performance.now();
  let n = 0;
  while (performance.now() - start < ms) await store.put(key(n++), VALUE);
  const secs = (performance.now() - start) / 1000;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return n / secs;
}

async function rangeLatency(): Promise<Record<string, { p50: number; p99: number; n: number }>> {
  const dir = tempDir();
  const store = await open({ dir, maxTxnOps: 1000, leaseCheckIntervalMs: 0, sync: false });
  for (let i = 0; i < KEYS; i += 1000) {
    const success: RequestOp[] = [];
    for (let j = i; j < Math.min(KEYS, i + 1000); j++)
      success.push({ type: 'put', request: { key: key(j), value: VALUE } });
    await store.txn({ compare: [], success, failure: [] });
  }
  const prefix = Buffer.from('bench/');
  const cases: Record<string, { request: Parameters<typeof store.range>[0]; n: number }> = {
    'range all 100k (full result)': {
      request: { key: prefix, rangeEnd: prefixEnd(prefix) },
      n: 10,
    },
    'range limit 100 (count over 100k)': {
      request: { key: prefix, rangeEnd: prefixEnd(prefix), limit: 100 },
      n: 50,
    },
    'count_only over 100k': {
      request: { key: prefix, rangeEnd: prefixEnd(prefix), countOnly: true },
      n: 50,
    },
    'single key get': { request: { key: key(KEYS >> 1) }, n: 5000 },
  };
  const out: Record<string, { p50: number; p99: number; n: number }> = {};
  for (const [name, c] of Object.entries(cases)) {
    const h = hdr.build({
      lowestDiscernibleValue: 1,
      highestTrackableValue: 60_000_000,
      numberOfSignificantValueDigits: 3,
    });
    for (let i = 0; i < c.n; i++) {
      const t0 = performance.now();
      await store.range(c.request);
      h.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
    }
    out[name] = {
      p50: h.getValueAtPercentile(50) / 1000,
      p99: h.getValueAtPercentile(99) / 1000,
      n: c.n,
    };
  }
  // Heap held per key: reopen the store (the key index is rebuilt from disk) and measure,
  // with no reference left to the first store.
  await store.close();
  const gc = (globalThis as { gc?: () => void }).gc;
  const reopened = await heapDelta(gc, () => open({ dir, leaseCheckIntervalMs: 0 }));
  out['heap bytes per key'] = { p50: reopened.bytes / KEYS, p99: 0, n: KEYS };
  await reopened.value.close();
  rmSync(dir, { recursive: true, force: true });
  return out;
}

async function heapDelta<T>(
  gc: (() => void) | undefined,
  make: () => Promise<T>,
): Promise<{ bytes: number; value: T }> {
  gc?.();
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const value = await make();
  gc?.();
  gc?.();
  return { bytes: process.memoryUsage().heapUsed - before, value };
}

function meta() {
  let commit = 'unknown';
  try {
    commit = execSync('git rev-parse --short HEAD', { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {}
  return {
    commit,
    node: process.version,
    keys: KEYS,
    valueBytes: VALUE.length,
    batch: BATCH,
    date: new Date().toISOString(),
  };
}

const result = {
  meta: meta(),
  batchedPutsPerSec: await batchedPuts(),
  txn1000KeysPerSec: await txnPuts(),
  sequentialPutsPerSec: await sequentialPuts(2000),
  ranges: await rangeLatency(),
};
console.log(
  `store benchmark (${KEYS} keys, ${VALUE.length}-byte values), node ${process.version}, commit ${result.meta.commit}`,
);
console.log(
  `  single-put commands, ${BATCH} per batch, 1 fsync/batch : ${Math.round(result.batchedPutsPerSec).toLocaleString()} keys/s`,
);
console.log(
  `  1,000-put txns, 1 fsync/txn                      : ${Math.round(result.txn1000KeysPerSec).toLocaleString()} keys/s`,
);
console.log(
  `  single puts awaited one by one (fsync each)       : ${Math.round(result.sequentialPutsPerSec).toLocaleString()} puts/s`,
);
for (const [name, r] of Object.entries(result.ranges)) {
  if (name.startsWith('heap')) console.log(`  ${name.padEnd(48)} : ${Math.round(r.p50)} B`);
  else
    console.log(
      `  ${name.padEnd(48)} : p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  (n=${r.n})`,
    );
}
mkdirSync('bench/results', { recursive: true });
const file = `bench/results/store-${result.meta.date.replace(/[:.]/g, '-')}.json`;
writeFileSync(file, JSON.stringify(result, null, 2));
console.log(`  written to ${file}`);
