/**
 * A load generator of the fan-out benchmark (a child process of fanout.ts): it owns a share of
 * the connections and the watchers on them, creates every watch from the run's start revision,
 * and for each event received records latency (receipt time minus the writer's stamp in the
 * value) and checks the watcher's revision sequence. Lean on purpose: responses are scanned
 * for the few fields it needs (bench/lib/etcd-json-scan.ts, etcd-proto.ts), never parsed into
 * objects.
 *
 * gRPC (etcd, and etcetera by default): one grpc-js Client per connection (its own subchannel,
 * so its own TCP connection) with one Watch stream carrying all of that connection's watches,
 * as etcd's clients multiplex them; the same code path for both systems. JSON (etcetera with
 * --protocol json): one websocket per connection at /v3/watch (many watches each, JSON
 * messages), read by a minimal frame reader.
 */
import { performance } from 'node:perf_hooks';
import { Client, credentials } from '@grpc/grpc-js';
import {
  connectionOfWatcher,
  type FromGenerator,
  type GeneratorResult,
  groupOfWatcher,
  nowUs,
  prefixOf,
  prefixRange,
  type RunConfig,
  type ToGenerator,
} from './fanout-plan.js';
import { scanJsonWatchResponse } from './lib/etcd-json-scan.js';
import { encodeWatchCreate, scanWatchResponse, type WatchResponseInfo } from './lib/etcd-proto.js';
import { encodeHistogram, latencyHistogram, recordClamped } from './lib/histogram.js';
import { connectLean } from './lib/ws-lean.js';

interface Conn {
  /** Local watcher indices in the order their creates were sent (= order of `created`). */
  readonly order: number[];
  createdSeen: number;
  /** watch id → local watcher index (etcd and etcetera both number watches 0, 1, ... per stream). */
  readonly byId: number[];
  close(): void;
}

const CONNECT_PARALLEL = 64;
const histogram = latencyHistogram();
const errors: string[] = [];
let config: RunConfig;
let index = 0;

// Per local watcher: its group, last revision, and counts. Typed arrays keep 10k watchers cheap.
let group: Int32Array;
let lastRev: Float64Array;
let received: Float64Array;
let revSum: Float64Array;
let dups: Uint32Array;
let ooo: Uint32Array;
let delivered = 0;
let canceled = 0;
let unexpected = 0;
let createdTotal = 0;
let firstReceiptUs = 0;
let lastReceiptUs = 0;
const conns: Conn[] = [];
let setupMs = 0;
/** Set once results are asked for: closing streams is expected from then on. */
let finishing = false;

// The response being scanned; the event visitor reads these instead of allocating a closure.
const info: WatchResponseInfo = {
  watchId: 0,
  headerRevision: 0,
  created: false,
  canceled: false,
  compactRevision: 0,
  cancelReason: '',
  events: 0,
};
let curConn: Conn;
let curTimeUs = 0;

function noteError(message: string): void {
  if (errors.length < 10) errors.push(message);
}

function send(m: FromGenerator): void {
  process.send?.(m);
}

function visitEvent(modRevision: number, stamp: number): void {
  const w = curConn.byId[info.watchId];
  if (w === undefined) {
    unexpected++;
    return;
  }
  delivered++;
  if (!Number.isNaN(stamp)) recordClamped(histogram, curTimeUs - stamp);
  const last = lastRev[w]!;
  if (modRevision > last) {
    lastRev[w] = modRevision;
    received[w]!++;
    revSum[w]! += modRevision;
  } else if (modRevision === last) dups[w]!++;
  else ooo[w]!++;
}

/** After a scan: a created answer maps its watch id; a cancel is counted. */
function afterResponse(conn: Conn): void {
  if (info.events > 0) {
    lastReceiptUs = curTimeUs;
    if (firstReceiptUs === 0) firstReceiptUs = curTimeUs;
    return;
  }
  if (info.created && !info.canceled && info.watchId >= 0) {
    const local = conn.order[conn.createdSeen++];
    if (local === undefined) noteError(`unexpected created response for watch ${info.watchId}`);
    else {
      conn.byId[info.watchId] = local;
      createdTotal++;
    }
  } else if (info.canceled) {
    canceled++;
    noteError(
      `watch ${info.watchId} canceled: ${info.cancelReason || `compacted at ${info.compactRevision}`}`,
    );
  }
}

function onJsonMessage(conn: Conn, payload: Buffer): void {
  curConn = conn;
  curTimeUs = nowUs();
  scanJsonWatchResponse(payload, info, visitEvent);
  afterResponse(conn);
}

function onProtoMessage(conn: Conn, payload: Buffer): void {
  curConn = conn;
  curTimeUs = nowUs();
  scanWatchResponse(payload, info, visitEvent);
  afterResponse(conn);
}

function createJson(watcher: number): string {
  const { key, rangeEnd } = prefixRange(prefixOf(config, group[watcher]!));
  return JSON.stringify({
    create_request: {
      key: key.toString('base64'),
      range_end: rangeEnd.toString('base64'),
      start_revision: String(config.startRevision),
    },
  });
}

async function openEtcetera(watchers: number[]): Promise<Conn> {
  const conn: Conn = { order: watchers, createdSeen: 0, byId: [], close: () => {} };
  const url = `${config.clientUrl.replace(/^http/, 'ws')}/v3/watch`;
  const ws = await connectLean(url, {
    onMessage: (payload) => onJsonMessage(conn, payload),
    onClose: (reason) => {
      if (!finishing) noteError(`websocket closed: ${reason}`);
    },
  });
  conn.close = () => ws.close();
  for (const w of watchers) ws.send(createJson(w));
  return conn;
}

function openGrpc(watchers: number[]): Conn {
  const conn: Conn = { order: watchers, createdSeen: 0, byId: [], close: () => {} };
  const client = new Client(`127.0.0.1:${config.port}`, credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
    'grpc.max_receive_message_length': -1,
  });
  const identity = (b: Buffer) => b;
  const call = client.makeBidiStreamRequest<Buffer, Buffer>(
    '/etcdserverpb.Watch/Watch',
    identity,
    identity,
  );
  call.on('data', (payload: Buffer) => onProtoMessage(conn, payload));
  call.on('error', (e: Error) => {
    if (!finishing) noteError(`watch stream: ${e.message}`);
  });
  conn.close = () => {
    call.cancel();
    client.close();
  };
  for (const w of watchers) {
    const { key, rangeEnd } = prefixRange(prefixOf(config, group[w]!));
    call.write(encodeWatchCreate(key, rangeEnd, config.startRevision));
  }
  return conn;
}

async function start(c: RunConfig, g: number, generators: number): Promise<void> {
  config = c;
  index = g;
  const t0 = performance.now();
  // This generator's connections, each with its watchers (in global order).
  const byConn = new Map<number, number[]>();
  for (let w = 0; w < c.watchers; w++) {
    const conn = connectionOfWatcher(c, w);
    if (conn % generators !== g) continue;
    const list = byConn.get(conn) ?? [];
    list.push(w);
    byConn.set(conn, list);
  }
  // Local watcher numbering: position in the concatenation of the connections' lists.
  const lists = [...byConn.values()];
  const total = lists.reduce((n, l) => n + l.length, 0);
  group = new Int32Array(total);
  lastRev = new Float64Array(total);
  received = new Float64Array(total);
  revSum = new Float64Array(total);
  dups = new Uint32Array(total);
  ooo = new Uint32Array(total);
  let next = 0;
  const localLists = lists.map((l) =>
    l.map((w) => {
      group[next] = groupOfWatcher(c, w);
      return next++;
    }),
  );
  for (let i = 0; i < localLists.length; i += CONNECT_PARALLEL) {
    const batch = localLists.slice(i, i + CONNECT_PARALLEL);
    const opened = await Promise.all(
      batch.map((l) => (c.protocol === 'grpc' ? Promise.resolve(openGrpc(l)) : openEtcetera(l))),
    );
    conns.push(...opened);
  }
  while (createdTotal < total) {
    if (errors.length > 0 && canceled > 0) throw new Error(`watch creation failed: ${errors[0]}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  setupMs = performance.now() - t0;
  send({ type: 'ready', setupMs });
}

// --- measuring window and results ---------------------------------------------------------

let measureFrom: {
  t: number;
  cpu: NodeJS.CpuUsage;
  elu: ReturnType<typeof performance.eventLoopUtilization>;
};
let activeUntil: typeof measureFrom;
let progressTimer: NodeJS.Timeout | undefined;

function snapshot(): typeof measureFrom {
  return { t: nowUs(), cpu: process.cpuUsage(), elu: performance.eventLoopUtilization() };
}

/** From now on: report progress, and keep the CPU reading taken at the last sign of activity. */
function measure(): void {
  measureFrom = snapshot();
  activeUntil = measureFrom;
  let seen = 0;
  progressTimer = setInterval(() => {
    if (delivered === seen) return;
    seen = delivered;
    activeUntil = snapshot();
    send({ type: 'progress', delivered });
  }, 250);
}

function finish(groupRevisions: number[][]): void {
  finishing = true;
  if (progressTimer !== undefined) clearInterval(progressTimer);
  const prefixSums = groupRevisions.map((revs) => {
    const sums = [0];
    for (const r of revs) sums.push(sums[sums.length - 1]! + r);
    return sums;
  });
  let lost = 0;
  let pending = 0;
  let duplicated = 0;
  let outOfOrder = 0;
  for (let w = 0; w < group.length; w++) {
    const g = group[w]!;
    const revs = groupRevisions[g] ?? [];
    // The watcher got revisions in increasing order: every expected one up to its last is due.
    const upTo = countAtOrBelow(revs, lastRev[w]!);
    const got = received[w]!;
    if (got < upTo) lost += upTo - got;
    // Same count but another set (one missing, one foreign) is a loss too.
    else if (revSum[w] !== prefixSums[g]![upTo]) lost += 1;
    pending += revs.length - upTo;
    duplicated += dups[w]!;
    outOfOrder += ooo[w]!;
  }
  const seconds = (activeUntil.t - measureFrom.t) / 1e6;
  const cpuUs =
    activeUntil.cpu.user - measureFrom.cpu.user + (activeUntil.cpu.system - measureFrom.cpu.system);
  const result: GeneratorResult = {
    index,
    watchers: group.length,
    connections: conns.length,
    setupMs,
    delivered,
    lost,
    pending,
    duplicated,
    outOfOrder,
    canceled,
    unexpected,
    latency: encodeHistogram(histogram),
    firstReceiptUs,
    lastReceiptUs,
    cpuPct: seconds > 0 ? cpuUs / 1e4 / seconds : 0,
    cpuSeconds: cpuUs / 1e6,
    eventLoopUtilization: performance.eventLoopUtilization(activeUntil.elu, measureFrom.elu)
      .utilization,
    rssMiB: process.memoryUsage.rss() / 2 ** 20,
    errors,
  };
  for (const c of conns) c.close();
  process.send?.({ type: 'result', result } satisfies FromGenerator, () => process.exit(0));
}

/** How many of the sorted `revs` are at or below `r`. */
function countAtOrBelow(revs: readonly number[], r: number): number {
  let lo = 0;
  let hi = revs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (revs[mid]! <= r) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

process.on('message', (m: ToGenerator) => {
  switch (m.type) {
    case 'start':
      start(m.config, m.index, m.generators).catch((e: Error) => fail(e));
      return;
    case 'measure':
      measure();
      return;
    case 'finish':
      finish(m.groupRevisions);
      return;
  }
});

function fail(e: Error): void {
  process.send?.(
    {
      type: 'error',
      message: `generator ${index}: ${e.stack ?? e.message}`,
    } satisfies FromGenerator,
    () => process.exit(1),
  );
}

process.on('uncaughtException', fail);
// The orchestrator is gone: nothing will ever ask for results.
process.on('disconnect', () => process.exit(0));
