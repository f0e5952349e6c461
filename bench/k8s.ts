/**
 * Kubernetes face benchmark: `npm run bench:k8s [-- --objects 10000 --watchers 1000,10000 --rate 100,1000]`
 *
 * 1. List: N pods in one namespace; p50/p99 of a list served from the face's decoded cache
 *    (resourceVersion "" and "0", over HTTP), from the store (resourceVersionMatch=Exact at an
 *    older revision, over HTTP), and, in process, what one list costs from the store's range
 *    (still to decode).
 * 2. Watch fan-out: W watchers, each on its own HTTP connection with
 *    fieldSelector=spec.nodeName=node-i, while pods (one per node) change at R writes/s; each
 *    write stamps its send time in an annotation and the watchers (in a child process, so the
 *    server's event loop and file descriptors are its own) record the delivery latency.
 *    Reports p50/p99/max latency, events delivered vs written, and misdelivered events.
 *
 * The member is the real store (src/store) behind a minimal MemberApi, no Raft: the numbers are
 * the face's (decode, index, encode, write to sockets). Writes go to the store directly (the
 * writer is not what is measured). Results go to bench/results/k8s-<time>.json.
 */
import { execSync, fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import express from 'express';
import { Registry } from 'prom-client';
import { type KubeFace, mountKubernetes } from '../src/api/k8s/index.js';
import type { MemberApi, ResponseHeader } from '../src/server/types.js';
import { type EmbeddedStore, open, prefixEnd } from '../src/store/index.js';
import type { Command, RangeRequest, Revision } from '../src/store/types.js';

const { values: args } = parseArgs({
  options: {
    role: { type: 'string', default: 'main' },
    objects: { type: 'string', default: '10000' },
    iterations: { type: 'string', default: '40' },
    watchers: { type: 'string', default: '1000,10000' },
    rate: { type: 'string', default: '100,1000' },
    duration: { type: 'string', default: '10' },
    'skip-list': { type: 'boolean', default: false },
    'skip-watch': { type: 'boolean', default: false },
    url: { type: 'string' },
    from: { type: 'string' },
  },
});

const now = () => performance.timeOrigin + performance.now();

function quantiles(xs: number[]): { p50: number; p99: number; max: number; n: number } {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN;
  return { p50: q(0.5), p99: q(0.99), max: s[s.length - 1] ?? Number.NaN, n: s.length };
}

const round = (v: number) => Math.round(v * 100) / 100;

// --- a member over the store (no Raft) ---------------------------------------------------------

function benchMember(store: EmbeddedStore): MemberApi {
  const header = (revision: Revision = store.currentRevision): ResponseHeader => ({
    clusterId: '1',
    memberId: '1',
    revision,
    raftTerm: 1,
  });
  const unsupported = () => Promise.reject(new Error('not in this benchmark'));
  return {
    header,
    range: async (r: RangeRequest) => {
      const result = await store.range(r);
      return { header: header(result.revision), result };
    },
    write: async (c: Command) => ({ header: header(), result: await store.submit(c) }),
    leaseKeepAlive: unsupported,
    leaseTimeToLive: unsupported,
    leaseLeases: unsupported,
    memberList: unsupported,
    memberAdd: unsupported,
    memberRemove: unsupported,
    memberPromote: unsupported,
    memberUpdate: unsupported,
    status: unsupported,
    health: () => ({ health: true, reason: '' }),
    watchSource: store,
    metrics: new Registry(),
    maxRequestBytes: 1.5 * 1024 * 1024,
  };
}

const enc = new TextEncoder();

function podJson(i: number, node: string, sentMs?: number): Uint8Array {
  const name = `pod-${String(i).padStart(6, '0')}`;
  return enc.encode(
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: 'default',
        uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`,
        creationTimestamp: '2026-01-01T00:00:00Z',
        labels: { app: 'bench', shard: String(i % 10) },
        annotations: sentMs === undefined ? {} : { 'bench/sent': String(sentMs) },
      },
      spec: {
        nodeName: node,
        containers: [
          { name: 'app', image: 'registry.example/app:1.0', ports: [{ containerPort: 8080 }] },
        ],
      },
      status: { phase: 'Running', podIP: `10.0.${(i >> 8) & 255}.${i & 255}` },
    }),
  );
}

const podKey = (i: number) =>
  enc.encode(`/registry/core/pods/default/pod-${String(i).padStart(6, '0')}`);

async function seed(store: EmbeddedStore, n: number, node: (i: number) => string): Promise<void> {
  for (let i = 0; i < n; i += 100) {
    const success = [];
    for (let j = i; j < Math.min(n, i + 100); j++) {
      success.push({
        type: 'put' as const,
        request: { key: podKey(j), value: podJson(j, node(j)) },
      });
    }
    await store.txn({ compare: [], success, failure: [] });
  }
}

interface Harness {
  url: string;
  store: EmbeddedStore;
  member: MemberApi;
  kube: KubeFace;
  close(): Promise<void>;
}

async function startServer(): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'etcetera-bench-k8s-'));
  const store = await open({ dir, sync: false, leaseCheckIntervalMs: 0 });
  const member = benchMember(store);
  const app = express();
  const kube = mountKubernetes(app, member, { createDefaultNamespaces: true });
  const server = createServer(app);
  server.maxConnections = 19_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    store,
    member,
    kube,
    async close() {
      await kube.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function get(url: string): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: 'application/json' } }, (res) => {
      let bytes = 0;
      res.on('data', (b: Buffer) => {
        bytes += b.length;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function time(iterations: number, fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 3; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

// --- 1. list ----------------------------------------------------------------------------------

async function listBench(objects: number, iterations: number) {
  const h = await startServer();
  try {
    await h.kube.ready;
    await seed(h.store, objects, (i) => `node-${i % 100}`);
    const exactRev = h.store.currentRevision;
    await h.member.write({
      op: 'put',
      key: enc.encode('/registry/other'),
      value: enc.encode('{}'),
    });
    const base = `${h.url}/api/v1/namespaces/default/pods`;
    const check = await get(base);
    const results: Record<string, ReturnType<typeof quantiles> & { bytes?: number }> = {};
    const run = async (name: string, fn: () => Promise<unknown>) => {
      results[name] = quantiles(await time(iterations, fn));
      console.log(
        `  ${name.padEnd(42)} p50 ${round(results[name].p50)} ms  p99 ${round(results[name].p99)} ms`,
      );
    };
    console.log(
      `list of ${objects} pods (${(check.bytes / 1e6).toFixed(1)} MB), ${iterations} iterations:`,
    );
    await run('http: cache, resourceVersion "" (consistent)', () => get(base));
    await run('http: cache, resourceVersion "0"', () => get(`${base}?resourceVersion=0`));
    await run('http: store, Exact at an older revision', () =>
      get(`${base}?resourceVersion=${exactRev}&resourceVersionMatch=Exact`),
    );
    const prefix = enc.encode('/registry/core/pods/default/');
    const dec = new TextDecoder();
    await run('in process: store range + decode', async () => {
      const r = await h.store.range({ key: prefix, rangeEnd: prefixEnd(prefix) });
      for (const kv of r.kvs) JSON.parse(dec.decode(kv.value));
    });
    return { objects, bytes: check.bytes, results };
  } finally {
    await h.close();
  }
}

// --- 2. watch fan-out -----------------------------------------------------------------------------

interface ClientReport {
  type: 'ready' | 'done';
  latencies?: number[];
  received?: number;
  wrong?: number;
  connected?: number;
  failed?: number;
}

async function watchBench(watchers: number, rate: number, durationS: number) {
  const h = await startServer();
  try {
    await h.kube.ready;
    await seed(h.store, watchers, (i) => `node-${i}`);
    const startRev = h.store.currentRevision;
    const child = fork(fileURLToPath(import.meta.url), [
      '--role',
      'clients',
      '--url',
      h.url,
      '--watchers',
      String(watchers),
      '--from',
      String(startRev),
    ]);
    const reports: ClientReport[] = [];
    const next = () =>
      new Promise<ClientReport>((resolve) =>
        child.once('message', (m) => resolve(m as ClientReport)),
      );
    const ready = await next();
    const hubWatchers = h.kube.hub.watchers.size;
    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    // Writes: `rate` per second in 10 ms ticks, round robin over the pods (one per node).
    let written = 0;
    const start = performance.now();
    const end = start + durationS * 1000;
    let i = 0;
    while (performance.now() < end) {
      const due = Math.floor(((performance.now() - start) / 1000) * rate) - written;
      const writes: Promise<unknown>[] = [];
      for (let k = 0; k < due; k++) {
        const pod = i++ % watchers;
        writes.push(h.store.put(podKey(pod), podJson(pod, `node-${pod}`, now())));
        written++;
      }
      await Promise.all(writes);
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, 1500));
    loop.disable();
    const cpu = process.cpuUsage(cpu0);
    const wallMs = performance.now() - wall0;
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const serverCpu = cpuMs / wallMs;
    child.send('finish');
    const done = await next();
    reports.push(ready, done);
    child.kill();
    const lat = quantiles(done.latencies ?? []);
    const row = {
      watchers,
      rate,
      durationS,
      connected: ready.connected,
      failed: ready.failed,
      hubWatchers,
      written,
      delivered: done.received,
      misdelivered: done.wrong,
      p50: round(lat.p50),
      p99: round(lat.p99),
      max: round(lat.max),
      serverCpu: round(serverCpu),
      deliveriesPerS: Math.round(((done.received ?? 0) * 1000) / wallMs),
      /** Server CPU (user + system) over the run per event delivered, in microseconds. */
      cpuUsPerDelivery: round((cpuMs * 1000) / Math.max(1, done.received ?? 0)),
      serverLoopDelayP99Ms: round(loop.percentile(99) / 1e6),
      loadavg: loadavg()[0] ?? 0,
    };
    console.log(
      `  ${watchers} watchers x ${rate} writes/s: connected ${row.connected}, written ${written}, delivered ${row.delivered}, misdelivered ${row.misdelivered}; latency p50 ${row.p50} ms p99 ${row.p99} ms max ${row.max} ms; server CPU ${row.serverCpu} cores, ${row.deliveriesPerS} deliveries/s, ${row.cpuUsPerDelivery} µs CPU per delivery, loop delay p99 ${row.serverLoopDelayP99Ms} ms, load ${row.loadavg.toFixed(1)}`,
    );
    return row;
  } finally {
    await h.close();
  }
}

/** The child: W watch connections, one per node; records each event's latency. */
async function clients(): Promise<void> {
  const url = args.url as string;
  const watchers = Number(args.watchers);
  const from = args.from as string;
  const latencies: number[] = [];
  let received = 0;
  let wrong = 0;
  let connected = 0;
  let failed = 0;
  const open = (i: number) =>
    new Promise<void>((resolve) => {
      const node = `node-${i}`;
      const path = `/api/v1/pods?watch=1&resourceVersion=${from}&fieldSelector=spec.nodeName%3D${node}`;
      const req = request(url + path, { agent: false }, (res) => {
        connected++;
        resolve();
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const t = now();
          buf += chunk;
          let nl = buf.indexOf('\n');
          while (nl >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            nl = buf.indexOf('\n');
            if (line === '') continue;
            const e = JSON.parse(line);
            received++;
            if (e.object?.spec?.nodeName !== node) wrong++;
            const sent = Number(e.object?.metadata?.annotations?.['bench/sent']);
            if (sent > 0) latencies.push(t - sent);
          }
        });
      });
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end();
    });
  for (let i = 0; i < watchers; i += 200) {
    await Promise.all(Array.from({ length: Math.min(200, watchers - i) }, (_, k) => open(i + k)));
  }
  process.send?.({ type: 'ready', connected, failed } satisfies ClientReport);
  process.on('message', () => {
    process.send?.({ type: 'done', latencies, received, wrong } satisfies ClientReport, () =>
      process.exit(0),
    );
  });
}

async function main(): Promise<void> {
  const list = args['skip-list']
    ? undefined
    : await listBench(Number(args.objects), Number(args.iterations));
  const watch = [];
  if (!args['skip-watch']) {
    const ws = (args.watchers as string).split(',').map(Number);
    const rs = (args.rate as string).split(',').map(Number);
    console.log(
      `watch fan-out, one connection per watcher, fieldSelector=spec.nodeName, ${args.duration} s each:`,
    );
    for (let k = 0; k < ws.length; k++) {
      watch.push(
        await watchBench(
          ws[k] as number,
          (rs[k] ?? rs[rs.length - 1]) as number,
          Number(args.duration),
        ),
      );
    }
  }
  const commit = (() => {
    try {
      return execSync('git rev-parse --short HEAD').toString().trim();
    } catch {
      return 'unknown';
    }
  })();
  const dir = join(process.cwd(), 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `k8s-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify({ commit, node: process.version, args, list, watch }, null, 2),
  );
  console.log(`results: ${file}`);
}

if (args.role === 'clients') void clients();
else
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
