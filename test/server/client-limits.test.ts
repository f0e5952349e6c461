/**
 * The client port's limits under abuse, against one member on 127.0.0.1 with raw sockets:
 * --max-connections closes one connection more at once (and counts it) while the open ones
 * keep working; a connection that sends nothing, headers that trickle in a byte at a time,
 * an HTTP/2 preface whose client never answers the SETTINGS, and request bodies that trickle
 * in on either face are all cut by --read-header-timeout / --read-body-timeout, with a clear
 * answer where HTTP has one and nothing written; long-lived watch streams (the etcd JSON
 * stream with its open request body, a Kubernetes watch, a gRPC Watch) outlive both
 * timeouts. --max-watches-per-stream holds on a gRPC Watch as on the JSON stream.
 */
import { connect, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { b, RawClient } from '../api/grpc/client.js';
import { startSingle, waitFor } from './helpers.js';

const HEADER_MS = 800;
const BODY_MS = 500;
const MAX_CONNECTIONS = 6;
/** Longest a test waits for the member to act on a limit before it fails. */
const GUARD_MS = 8000;

const member = await startSingle(t.testdir(), {
  maxConnections: MAX_CONNECTIONS,
  readHeaderTimeout: `${HEADER_MS}ms`,
  readBodyTimeout: `${BODY_MS}ms`,
  maxWatchesPerStream: 2,
});
t.teardown(() => member.stop());
const url = String(member.clientUrls[0]).replace(/\/$/, '');
const port = Number(new URL(url).port);
const host = new URL(url).host;
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A raw TCP connection to the member: what it received, and whether it was closed. */
class Raw {
  received = Buffer.alloc(0);
  closed = false;
  readonly closedP: Promise<void>;
  private waiters: (() => void)[] = [];
  private constructor(readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.received = Buffer.concat([this.received, d]);
      this.wake();
    });
    socket.on('error', () => {});
    this.closedP = new Promise((resolve) =>
      socket.once('close', () => {
        this.closed = true;
        this.wake();
        resolve();
      }),
    );
  }

  static open(): Promise<Raw> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve(new Raw(s)));
      s.once('error', reject);
    });
  }

  private wake(): void {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }

  /** Waits until `pred` holds (or fails after GUARD_MS). */
  async until(what: string, pred: () => boolean): Promise<void> {
    const deadline = Date.now() + GUARD_MS;
    while (!pred()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((r) => {
        const timer = setTimeout(r, 100);
        this.waiters.push(() => {
          clearTimeout(timer);
          r();
        });
      });
    }
  }

  text(): string {
    return this.received.toString('latin1');
  }

  /**
   * Sends a GET and waits for its whole (Content-Length) answer; returns the status, 0 when
   * the connection closed first.
   */
  async get(path: string): Promise<number> {
    this.received = Buffer.alloc(0);
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    const whole = () => {
      const t = this.text();
      const end = t.indexOf('\r\n\r\n');
      const len = /content-length: (\d+)/i.exec(t)?.[1];
      return end >= 0 && len !== undefined && t.length >= end + 4 + Number(len);
    };
    await this.until(`the answer to GET ${path}`, () => whole() || this.closed);
    return whole() ? Number(this.text().slice(9, 12)) : 0;
  }
}

async function metric(name: string): Promise<string> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(name))
    .join('\n');
}

/** A new connection is served (retried while the member may still count closed ones). */
async function served(): Promise<boolean> {
  const r = await Raw.open();
  try {
    return (await r.get('/health')) === 200;
  } finally {
    r.socket.destroy();
  }
}

async function stillServes(t: Test): Promise<void> {
  await waitFor('a normal request to be answered', served, GUARD_MS);
  t.pass('the member still answers a normal request');
}

async function trickle(raw: Raw, bytes: string, everyMs: number): Promise<void> {
  for (const ch of bytes) {
    if (raw.closed) return;
    raw.socket.write(ch);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

t.test(
  'a connection over --max-connections is closed at once, the open ones keep working',
  async (t) => {
    const open = await Promise.all(Array.from({ length: MAX_CONNECTIONS }, () => Raw.open()));
    t.teardown(() => {
      for (const r of open) r.socket.destroy();
    });
    for (const r of open) t.equal(await r.get('/health'), 200);
    const extra = await Raw.open();
    extra.socket.write(`GET /health HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    await extra.closedP;
    t.equal(extra.received.length, 0, 'the connection over the limit got not one byte');
    const first = open[0]!;
    t.equal(await first.get('/health'), 200, 'an open connection is unaffected');
    first.received = Buffer.alloc(0);
    first.socket.write(`GET /metrics HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    await first.until('the refusal in /metrics', () =>
      /^etcetera_client_connections_refused_total 1$/m.test(first.text()),
    );
    t.pass('the refusal is counted in etcetera_client_connections_refused_total');
    // One connection closes: a new one is served again.
    open.pop()!.socket.destroy();
    await waitFor('a new connection to be served', served, GUARD_MS);
    t.pass('one closed, a new connection is served');
    for (const r of open) r.socket.destroy();
    await stillServes(t);
  },
);

t.test('a connection that sends nothing is closed after --read-header-timeout', async (t) => {
  const raw = await Raw.open();
  await raw.until('the member to close a silent connection', () => raw.closed);
  t.equal(raw.received.length, 0);
  t.match(await metric('etcetera_client_connections_timed_out_total'), /reason="header"\} [1-9]/);
  await stillServes(t);
});

t.test('headers sent a byte at a time are cut with 408 (slowloris)', async (t) => {
  const raw = await Raw.open();
  t.teardown(() => raw.socket.destroy());
  raw.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
  void trickle(raw, 'X-Slow: '.padEnd(400, 'y'), 50);
  await raw.until('the member to close the connection', () => raw.closed);
  t.match(raw.text(), /^HTTP\/1\.1 408 /, 'node:http answers 408 Request Timeout');
  await stillServes(t);
});

t.test('an HTTP/2 preface whose client never answers SETTINGS is closed', async (t) => {
  const raw = await Raw.open();
  t.teardown(() => raw.socket.destroy());
  raw.socket.write(Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'));
  await raw.until('the member to close the connection', () => raw.closed);
  t.match(await metric('etcetera_client_connections_timed_out_total'), /reason="preface"\} [1-9]/);
  const c = new RawClient(host);
  t.teardown(() => c.close());
  const r = await c.call('/etcdserverpb.KV/Put', { key: b('h2-after'), value: b('v') });
  t.ok(r.header.revision > 1, 'a gRPC client is served afterwards');
});

t.test(
  'a body that trickles in gets an answer and a closed connection, nothing written',
  async (t) => {
    t.test('etcd JSON API: 408 ERR_BODY_TIMEOUT', async (t) => {
      const body = JSON.stringify({ key: b64('slow-etcd'), value: b64('v') });
      const raw = await Raw.open();
      t.teardown(() => raw.socket.destroy());
      raw.socket.write(
        `POST /v3/kv/put HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      void trickle(raw, body, 100);
      await raw.until('the member to close the connection', () => raw.closed);
      t.match(raw.text(), /^HTTP\/1\.1 408 /);
      t.match(raw.text(), /connection: close/i);
      t.match(raw.text(), /the request body did not arrive in time/);
      const r = await fetch(`${url}/v3/kv/range`, {
        method: 'POST',
        body: JSON.stringify({ key: b64('slow-etcd') }),
      });
      t.notOk(((await r.json()) as { kvs?: unknown[] }).kvs, 'the key was not written');
    });
    t.test('Kubernetes face: 504 Timeout Status', async (t) => {
      const body = JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'slow-kube' },
      });
      const raw = await Raw.open();
      t.teardown(() => raw.socket.destroy());
      raw.socket.write(
        `POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      void trickle(raw, body, 100);
      await raw.until('the member to close the connection', () => raw.closed);
      t.match(raw.text(), /^HTTP\/1\.1 504 /);
      t.match(raw.text(), /"reason":"Timeout"/);
      const r = await fetch(`${url}/api/v1/namespaces/default/configmaps/slow-kube`);
      t.equal(r.status, 404, 'the object was not created');
    });
    await stillServes(t);
  },
);

/** Reads a chunked HTTP response off a raw socket; resolves when `pattern` shows up. */
function seen(raw: Raw, pattern: RegExp): Promise<void> {
  return raw.until(`${pattern} on the stream`, () => pattern.test(raw.text()));
}

t.test('watch streams outlive both timeouts', async (t) => {
  // etcd's JSON watch stream: the request body stays open (chunked) for more requests.
  const etcd = await Raw.open();
  t.teardown(() => etcd.socket.destroy());
  const create = JSON.stringify({ create_request: { key: b64('outlive') } });
  etcd.socket.write(
    `POST /v3/watch HTTP/1.1\r\nHost: ${host}\r\nTransfer-Encoding: chunked\r\n\r\n${create.length.toString(16)}\r\n${create}\r\n`,
  );
  await seen(etcd, /"created":true/);
  // A Kubernetes watch.
  const kube = await Raw.open();
  t.teardown(() => kube.socket.destroy());
  kube.socket.write(
    `GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
  );
  await seen(kube, /^HTTP\/1\.1 200 /);
  // A gRPC Watch.
  const c = new RawClient(host);
  t.teardown(() => c.close());
  const w = c.watch();
  t.teardown(() => w.end());
  w.send({ create_request: { key: b('outlive') } });
  t.ok((await w.next()).created, 'the gRPC watch is created');
  // Time must pass here: no event says "the timeouts would have fired by now".
  await new Promise((r) => setTimeout(r, 2 * Math.max(HEADER_MS, BODY_MS)));
  const put = await fetch(`${url}/v3/kv/put`, {
    method: 'POST',
    body: JSON.stringify({ key: b64('outlive'), value: b64('later') }),
  });
  t.equal(put.status, 200);
  const cm = await fetch(`${url}/api/v1/namespaces/default/configmaps`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'outlive' } }),
  });
  t.equal(cm.status, 201);
  await seen(etcd, new RegExp(b64('later')));
  t.notOk(etcd.closed, 'the etcd JSON stream is open and delivering');
  await seen(kube, /"type":"ADDED".*"name":"outlive"/s);
  t.notOk(kube.closed, 'the Kubernetes watch is open and delivering');
  const events = await w.until((m) => (m.events ?? []).length > 0);
  t.equal(Buffer.from(events.at(-1)!.events[0].kv.value).toString(), 'later', 'gRPC delivers');
});

t.test('a Kubernetes watch holds its connection: a pipelined request waits for it', async (t) => {
  const raw = await Raw.open();
  t.teardown(() => raw.socket.destroy());
  raw.socket.write(
    `GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\nHost: ${host}\r\n\r\n` +
      `GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
  );
  await seen(raw, /^HTTP\/1\.1 200 /);
  const cm = await fetch(`${url}/api/v1/namespaces/default/configmaps`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'piped' } }),
  });
  t.equal(cm.status, 201);
  await seen(raw, /"name":"piped"/);
  t.equal(raw.text().match(/HTTP\/1\.1 \d{3} /g)?.length, 1, 'one watch per connection at a time');
});

t.test('--max-watches-per-stream holds on a gRPC Watch', async (t) => {
  const c = new RawClient(host);
  t.teardown(() => c.close());
  const w = c.watch();
  t.teardown(() => w.end());
  for (const k of ['g0', 'g1', 'g2']) w.send({ create_request: { key: b(k) } });
  const got = [await w.next(), await w.next(), await w.next()];
  t.same(
    got.map((m) => [m.created === true, m.canceled === true, Number(m.watch_id ?? 0)]),
    [
      [true, false, 0],
      [true, false, 1],
      [true, true, -1],
    ],
    'the third create is refused with watch_id -1, the stream goes on',
  );
  t.match(got[2]!.cancel_reason, /too many watches on this stream/);
  await stillServes(t);
});
