/**
 * The gRPC face's connection limits and keepalive, against a member on 127.0.0.1 with real
 * sockets: --max-concurrent-streams refuses the streams over the limit (REFUSED_STREAM) and
 * the member stays up; a client pinging more often than --grpc-keepalive-min-time gets a
 * GOAWAY with ENHANCE_YOUR_CALM and "too_many_pings", as grpc-go's server sends it, while a
 * client pinging slower keeps its connection; the member pings idle clients every
 * --grpc-keepalive-interval and closes a connection that does not answer within
 * --grpc-keepalive-timeout.
 */
import { mkdtempSync } from 'node:fs';
import http2 from 'node:http2';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { MemberConfigInput } from '../../../src/server/config.js';
import { startSingle, waitFor } from '../../server/helpers.js';
import { b, RawClient } from './client.js';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const FRAME = { HEADERS: 0x1, RST_STREAM: 0x3, SETTINGS: 0x4, PING: 0x6, GOAWAY: 0x7 } as const;

function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
}

/** An HPACK literal without indexing (plain strings; `index` names a static-table name). */
function literal(name: string | number, value: string): Buffer {
  const v = Buffer.from(value, 'latin1');
  if (typeof name === 'number') return Buffer.concat([Buffer.from([name, v.length]), v]);
  const n = Buffer.from(name, 'latin1');
  return Buffer.concat([Buffer.from([0, n.length]), n, Buffer.from([v.length]), v]);
}

/** HEADERS opening a Watch call on `stream`, left open (no END_STREAM). */
function watchHeaders(stream: number, authority: string): Buffer {
  const block = Buffer.concat([
    Buffer.from([0x83, 0x86]), // :method POST, :scheme http
    literal(4, '/etcdserverpb.Watch/Watch'), // :path
    literal(1, authority), // :authority
    literal('content-type', 'application/grpc'),
    literal('te', 'trailers'),
  ]);
  return frame(FRAME.HEADERS, 0x4, stream, block);
}

interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

/** The member's settings: the SETTINGS frames it sent, merged (an empty one may come first). */
function settingsOf(raw: { of(type: number): Frame[] }): Map<number, number> {
  const announced = new Map<number, number>();
  for (const f of raw.of(FRAME.SETTINGS).filter((x) => (x.flags & 1) === 0))
    for (let i = 0; i + 6 <= f.payload.length; i += 6)
      announced.set(f.payload.readUInt16BE(i), f.payload.readUInt32BE(i + 2));
  return announced;
}

/** A hand-driven HTTP/2 client connection: writes raw frames, parses what comes back. */
class RawH2 {
  readonly frames: Frame[] = [];
  closed = false;
  private buf = Buffer.alloc(0);
  private constructor(readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      while (this.buf.length >= 9) {
        const len = this.buf.readUIntBE(0, 3);
        if (this.buf.length < 9 + len) break;
        const f = {
          type: this.buf[3]!,
          flags: this.buf[4]!,
          stream: this.buf.readUInt32BE(5) & 0x7fffffff,
          payload: this.buf.subarray(9, 9 + len),
        };
        this.frames.push(f);
        // A well-behaved client acknowledges every SETTINGS (and only that).
        if (f.type === FRAME.SETTINGS && (f.flags & 1) === 0)
          socket.write(frame(FRAME.SETTINGS, 0x1, 0, Buffer.alloc(0)));
        this.buf = this.buf.subarray(9 + len);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
    });
  }

  static open(port: number): Promise<RawH2> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve(new RawH2(s)));
      s.once('error', reject);
    });
  }

  send(...frames: Buffer[]): void {
    this.socket.write(Buffer.concat(frames));
  }

  of(type: number): Frame[] {
    return this.frames.filter((f) => f.type === type);
  }
}

async function member(t: Test, extra: MemberConfigInput) {
  const m = await startSingle(mkdtempSync(join(tmpdir(), 'grpc-limits-')), extra);
  t.teardown(() => m.stop());
  const url = m.clientUrls[0]!;
  return { m, host: url.host, port: Number(url.port) };
}

/** A put over a fresh grpc-js channel: the member still serves. */
async function stillServes(t: Test, host: string, key: string): Promise<void> {
  const c = new RawClient(host);
  try {
    const r = await c.call('/etcdserverpb.KV/Put', { key: b(key), value: b('v') });
    t.ok(r.header.revision > 1, `a put through a new connection is acknowledged (${key})`);
  } finally {
    c.close();
  }
}

t.test(
  '--max-concurrent-streams: streams over the limit are refused, the member stays up',
  async (t) => {
    const { host, port } = await member(t, { maxConcurrentStreams: 4 });
    const raw = await RawH2.open(port);
    t.teardown(() => raw.socket.destroy());
    // Ten Watch calls at once, before the member's SETTINGS could be read: four may open.
    const ids = Array.from({ length: 10 }, (_, i) => 2 * i + 1);
    raw.send(
      PREFACE,
      frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0)),
      ...ids.map((id) => watchHeaders(id, host)),
    );
    await waitFor('six refused streams', () => raw.of(FRAME.RST_STREAM).length >= 6, 20_000);
    t.equal(settingsOf(raw).get(0x3), 4, 'SETTINGS_MAX_CONCURRENT_STREAMS = 4');
    const refused = raw
      .of(FRAME.RST_STREAM)
      .filter((f) => f.payload.readUInt32BE(0) === http2.constants.NGHTTP2_REFUSED_STREAM)
      .map((f) => f.stream)
      .sort((x, y) => x - y);
    t.same(refused, ids.slice(4), 'the six streams over the limit are refused');
    t.equal(raw.closed, false, 'the connection itself stays open');
    await stillServes(t, host, 'after-refused');
  },
);

t.test('the default announces etcd’s limit, 2^32-1 streams', async (t) => {
  const { host, port } = await member(t, {});
  const raw = await RawH2.open(port);
  t.teardown(() => raw.socket.destroy());
  raw.send(PREFACE, frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0)), watchHeaders(1, host));
  await waitFor('the member’s SETTINGS', () => settingsOf(raw).has(0x3), 20_000);
  t.equal(settingsOf(raw).get(0x3), 2 ** 32 - 1);
});

/** A node:http2 session to the member, and the GOAWAY it got, if any. */
function session(port: number) {
  const s = http2.connect(`http://127.0.0.1:${port}`);
  const got: { goaway?: { code: number; data: string } } = {};
  s.on('goaway', (code, _last, data) => {
    got.goaway = { code, data: data?.toString('latin1') ?? '' };
  });
  s.on('error', () => {});
  const ping = () =>
    new Promise<boolean>((resolve) => {
      if (s.destroyed || s.closed) return resolve(false);
      try {
        s.ping((err) => resolve(err === null));
      } catch {
        resolve(false);
      }
    });
  return { s, got, ping };
}

t.test('a client pinging more often than --grpc-keepalive-min-time gets GOAWAY', async (t) => {
  const { host, port } = await member(t, { grpcKeepaliveMinTime: '1s' });

  t.test('with a stream open: the third early ping is one too many', async (t) => {
    const { s, got, ping } = session(port);
    t.teardown(() => s.destroy());
    const stream = s.request({
      ':method': 'POST',
      ':path': '/etcdserverpb.Watch/Watch',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    stream.on('error', () => {});
    await new Promise((r) => s.once('connect', r));
    for (let i = 0; i < 6 && got.goaway === undefined; i++) await ping();
    await waitFor('GOAWAY', () => got.goaway !== undefined, 10_000);
    t.same(got.goaway, {
      code: http2.constants.NGHTTP2_ENHANCE_YOUR_CALM,
      data: 'too_many_pings',
    });
    await waitFor('the connection to close', () => s.destroyed || s.closed, 10_000);
  });

  t.test(
    'with no stream open: any ping after the first is early (etcd permits none)',
    async (t) => {
      const { s, got, ping } = session(port);
      t.teardown(() => s.destroy());
      await new Promise((r) => s.once('connect', r));
      for (let i = 0; i < 6 && got.goaway === undefined; i++) await ping();
      await waitFor('GOAWAY', () => got.goaway !== undefined, 10_000);
      t.equal(got.goaway?.code, http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    },
  );

  t.test('pinging slower than the minimum keeps the connection', async (t) => {
    const { s, got, ping } = session(port);
    t.teardown(() => s.destroy());
    const stream = s.request({
      ':method': 'POST',
      ':path': '/etcdserverpb.Watch/Watch',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    stream.on('error', () => {});
    await new Promise((r) => s.once('connect', r));
    for (let i = 0; i < 5; i++) {
      t.ok(await ping(), `ping ${i} answered`);
      await new Promise((r) => setTimeout(r, 1200));
    }
    t.equal(got.goaway, undefined, 'no GOAWAY');
    t.notOk(s.destroyed || s.closed, 'still connected');
  });

  await stillServes(t, host, 'after-goaway');
});

t.test(
  '--grpc-keepalive-interval/-timeout: a client that never answers pings is closed',
  async (t) => {
    const { host, port } = await member(t, {
      grpcKeepaliveInterval: '300ms',
      grpcKeepaliveTimeout: '300ms',
    });
    const raw = await RawH2.open(port);
    t.teardown(() => raw.socket.destroy());
    // A connection with a call open that acknowledges SETTINGS but never answers PINGs.
    raw.send(PREFACE, frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0)), watchHeaders(1, host));
    await waitFor('the member’s SETTINGS', () => settingsOf(raw).size > 0, 20_000);
    await waitFor('a PING from the member', () => raw.of(FRAME.PING).length > 0, 20_000);
    t.equal(raw.of(FRAME.PING)[0]!.flags & 1, 0, 'a ping, not an answer');
    await waitFor('the member to close the connection', () => raw.closed, 20_000);
    t.ok(raw.closed, 'closed after the unanswered ping');
    await stillServes(t, host, 'after-keepalive');
  },
);
