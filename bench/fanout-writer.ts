/**
 * The fan-out benchmark's writer (a child process of fanout.ts): puts at a fixed rate, open
 * loop (write n is due at start + n / rate, whatever earlier writes are doing, up to
 * `maxInFlight` outstanding), each value starting with the write's start time (8 bytes, a
 * big-endian double of monotonic microseconds) so that any watcher can compute its latency.
 * Per prefix it records the revisions the server acknowledged: what each watcher must receive.
 *
 * A put that failed is of unknown outcome ("request timed out" is answered while the proposal
 * may still commit), and a committed one reaches every watcher like any other. So once every
 * put has settled, the writer puts one barrier write (proposed after all of them, so applied
 * after all of them) and replays the run's history with one watch from its start revision
 * through the barrier, matching values by their stamp: a failed put found there counts as a write
 * (its revision is due to its watchers), one not found as not committed. Without this a
 * watcher that received a committed-but-failed write would be counted as having a gap.
 *
 * gRPC (etcd, and etcetera by default): KV/Put, hand encoded (bench/lib/etcd-proto.ts), on one
 * connection as etcd's clients do; the same code for both systems. JSON (etcetera with
 * --protocol json): POST /v3/kv/put over keep-alive HTTP.
 */
import { Agent, request } from 'node:http';
import { Client, credentials } from '@grpc/grpc-js';
import { Client as EtcdClient, type Watch } from '../src/client/index.js';
import {
  type FromWriter,
  groupCount,
  nowUs,
  type RunConfig,
  type ToWriter,
  type WriterResult,
  writeTarget,
} from './fanout-plan.js';
import { decodePutRevision, encodePut } from './lib/etcd-proto.js';
import { encodeHistogram, latencyHistogram, recordClamped } from './lib/histogram.js';

type PutFn = (
  key: string,
  value: Buffer,
  done: (err: Error | null, revision: number) => void,
) => void;

const REVISION = '"revision":"';

function etceteraPut(config: RunConfig): PutFn {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const url = new URL(config.clientUrl);
  return (key, value, done) => {
    const body = `{"key":"${Buffer.from(key).toString('base64')}","value":"${value.toString('base64')}"}`;
    const req = request(
      { host: url.hostname, port: url.port, path: '/v3/kv/put', method: 'POST', agent },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (s: string) => {
          text += s;
        });
        res.on('end', () => {
          const at = text.indexOf(REVISION);
          if (res.statusCode !== 200 || at < 0)
            done(new Error(`put: HTTP ${res.statusCode} ${text.slice(0, 200)}`), 0);
          else done(null, Number.parseInt(text.slice(at + REVISION.length), 10));
        });
      },
    );
    req.on('error', (e) => done(e, 0));
    req.setHeader('Content-Type', 'application/json');
    req.end(body);
  };
}

function grpcPut(config: RunConfig): PutFn {
  const client = new Client(`127.0.0.1:${config.port}`, credentials.createInsecure());
  const identity = (b: Buffer) => b;
  return (key, value, done) => {
    client.makeUnaryRequest<Buffer, Buffer>(
      '/etcdserverpb.KV/Put',
      identity,
      identity,
      encodePut(Buffer.from(key), value),
      (err, res) =>
        err || !res
          ? done(err ?? new Error('put: no response'), 0)
          : done(null, decodePutRevision(res)),
    );
  };
}

let config: RunConfig;
let put: PutFn;

/** A key no watcher watches ('/fanout-' sorts outside every '/fanout/' prefix). */
const WARMUP_KEY = '/fanout-warmup';

interface Failed {
  group: number;
  key: string;
  stamp: number;
}

/**
 * A put proposed after every put of the run: once it is acknowledged, all of them are applied
 * or never will be. A member still behind may time it out too; it is tried again.
 */
async function barrierPut(): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await putAsync(WARMUP_KEY, Buffer.alloc(8));
    } catch (e) {
      if (attempt >= 10) throw e;
    }
  }
}

/**
 * The revisions at which failed puts were committed after all (see the file comment), per
 * failed put in order; undefined where a put is not in its key's history.
 */
async function resolveFailed(
  c: RunConfig,
  failed: readonly Failed[],
): Promise<(number | undefined)[]> {
  if (failed.length === 0) return [];
  const barrier = await barrierPut();
  const client = new EtcdClient({
    endpoints: [c.clientUrl],
    timeoutMs: 30_000,
    transport: c.protocol,
  });
  // stamp → revision of every write under the run's prefixes, from one watch replaying the
  // history from the start revision: ['/fanout-', '/fanout0') holds the barrier's key and
  // every '/fanout/' prefix, so the barrier's own event says the replay is complete.
  const committed = new Map<number, number>();
  const watch = await new Promise<Watch>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('history replay took over 60 s')), 60_000);
    const w: Watch = client.watch(
      '/fanout-',
      { rangeEnd: '/fanout0', startRevision: c.startRevision },
      (batch) => {
        let complete = false;
        for (const e of batch.events) {
          if (e.kv.modRevision >= barrier) complete = true;
          const v = e.kv.value;
          if (v.length >= 8)
            committed.set(Buffer.from(v.buffer, v.byteOffset, 8).readDoubleBE(0), e.kv.modRevision);
        }
        if (complete) {
          clearTimeout(timer);
          resolve(w);
        }
      },
      {
        onError: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      },
    );
  });
  try {
    return failed.map((f) => committed.get(f.stamp));
  } finally {
    await watch.close();
    client.close();
  }
}

function makeValue(template: Buffer): Buffer {
  const v = Buffer.from(template);
  v.writeDoubleBE(nowUs(), 0);
  return v;
}

function putAsync(key: string, value: Buffer): Promise<number> {
  return new Promise((resolve, reject) => put(key, value, (e, r) => (e ? reject(e) : resolve(r))));
}

async function prepare(c: RunConfig): Promise<void> {
  config = c;
  put = c.protocol === 'grpc' ? grpcPut(c) : etceteraPut(c);
  // Warm the connection on a key no watcher watches.
  await putAsync(WARMUP_KEY, Buffer.alloc(8));
  process.send?.({ type: 'ready' } satisfies FromWriter);
}

function run(): void {
  const c = config;
  const template = Buffer.alloc(Math.max(8, c.valueBytes), 'x');
  const total = Math.round(c.rate * c.durationS);
  const groups = groupCount(c);
  const groupRevisions = Array.from({ length: groups }, (): number[] => []);
  const latency = latencyHistogram();
  const cpu0 = process.cpuUsage();
  const t0 = nowUs();
  let issued = 0;
  let inFlight = 0;
  let acked = 0;
  let errors = 0;
  const failed: Failed[] = [];
  let firstError: string | undefined;
  let lastStartUs = t0;
  let doneIssuing = 0;

  const one = (n: number) => {
    const { group, key } = writeTarget(c, n);
    const value = makeValue(template);
    const started = value.readDoubleBE(0);
    lastStartUs = started;
    inFlight++;
    put(key, value, (err, revision) => {
      inFlight--;
      if (err) {
        errors++;
        failed.push({ group, key, stamp: started });
        firstError ??= err.message;
      } else {
        acked++;
        recordClamped(latency, nowUs() - started);
        groupRevisions[group]!.push(revision);
      }
      if (doneIssuing > 0 && inFlight === 0) settle();
    });
  };
  const settle = () => {
    const cpu = process.cpuUsage(cpu0);
    const endUs = nowUs();
    resolveFailed(c, failed).then(
      (revisions) => {
        let committed = 0;
        revisions.forEach((r, i) => {
          if (r === undefined) return;
          committed++;
          groupRevisions[failed[i]!.group]!.push(r);
        });
        report(cpu, endUs, committed);
      },
      (e: Error) => {
        // A member too far behind to answer even now: the run's figures stand, but its gap
        // count may include these puts (the report says so).
        firstError ??= `failed puts not settled (${e.message}); gaps may count them`;
        report(cpu, endUs, 0);
      },
    );
  };
  const report = (cpu: NodeJS.CpuUsage, endUs: number, committedFailed: number) => {
    const result: WriterResult = {
      writes: acked + committedFailed,
      acked,
      errors,
      committedFailed,
      firstStartUs: t0,
      lastStartUs,
      achievedRate: issued / ((doneIssuing - t0) / 1e6),
      // Acknowledgements may come back out of order; watchers get revisions in order.
      groupRevisions: groupRevisions.map((rs) => rs.sort((a, b) => a - b)),
      putLatency: encodeHistogram(latency),
      cpuPct: (cpu.user + cpu.system) / 1e4 / ((endUs - t0) / 1e6),
      ...(firstError === undefined ? {} : { firstError }),
    };
    process.send?.({ type: 'done', result } satisfies FromWriter, () => process.exit(0));
  };
  const tick = () => {
    const now = nowUs();
    const due = Math.min(total, Math.floor(((now - t0) * c.rate) / 1e6) + 1);
    while (issued < due && inFlight < c.maxInFlight) one(issued++);
    if (issued >= total || now - t0 >= c.durationS * 1e6) {
      doneIssuing = nowUs();
      if (inFlight === 0) settle();
      return;
    }
    setTimeout(tick, 1);
  };
  tick();
}

process.on('message', (m: ToWriter) => {
  if (m.type === 'start') prepare(m.config).catch(fail);
  else run();
});

function fail(e: Error): void {
  process.send?.(
    { type: 'error', message: `writer: ${e.stack ?? e.message}` } satisfies FromWriter,
    () => process.exit(1),
  );
}

process.on('uncaughtException', fail);
process.on('disconnect', () => process.exit(0));
