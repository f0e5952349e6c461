/**
 * The etcd watch stream's rules at the wire (src/api/etcd/watch over a bare node:http server
 * and a ws server on 127.0.0.1): answers leave in request order (create c/1, create c/2,
 * cancel 0 is answered created 0, created 1, canceled 0, as a real etcd 3.4.23 answers it),
 * every response is exactly one HTTP chunk ending in a newline (as etcd's gateway writes it),
 * a stream holds at most --max-watches-per-stream watches, and a flood of progress requests is
 * answered once each, at a revision every event at or below which was already written.
 */
import { once } from 'node:events';
import http from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import t, { type Test } from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import { createEtcdWatchHandlers } from '../../src/api/etcd/watch/index.js';
import { Cacher } from '../../src/watchcache/cacher.js';
import { startSingle } from '../server/helpers.js';
import { MemoryStore } from '../watchcache/memory-store.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

async function serve(t: Test, maxWatchesPerStream?: number) {
  const store = new MemoryStore();
  const cacher = new Cacher(store);
  const watch = createEtcdWatchHandlers({ cacher, maxWatchesPerStream });
  const server = http.createServer((req, res) => watch.http(req, res));
  const wss = new WebSocketServer({ server, path: '/v3/watch' });
  wss.on('connection', (ws, req) => watch.websocket(ws, req));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  t.teardown(async () => {
    for (const c of wss.clients) c.terminate();
    wss.close();
    server.closeAllConnections();
    server.close();
    cacher.close();
  });
  return { store, cacher, port };
}

/**
 * A POST /v3/watch over a raw socket that decodes the chunked body itself and keeps every
 * chunk as it came, so a test sees chunk boundaries (node's http client hides them).
 */
function rawPost(port: number, body: string) {
  const socket = connect(port, '127.0.0.1');
  const chunks: string[] = [];
  let buf = Buffer.alloc(0);
  let headersDone = false;
  let waiter: (() => void) | null = null;
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    if (!headersDone) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString();
      if (!/transfer-encoding: chunked/i.test(head)) throw new Error(`not chunked: ${head}`);
      buf = buf.subarray(end + 4);
      headersDone = true;
    }
    for (;;) {
      const eol = buf.indexOf('\r\n');
      if (eol < 0) break;
      const size = Number.parseInt(buf.subarray(0, eol).toString(), 16);
      if (buf.length < eol + 2 + size + 2) break;
      chunks.push(buf.subarray(eol + 2, eol + 2 + size).toString());
      buf = buf.subarray(eol + 2 + size + 2);
    }
    waiter?.();
  });
  socket.on('error', () => {});
  socket.write(
    `POST /v3/watch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  const take = async (n: number, ms = 5000): Promise<string[]> => {
    const deadline = Date.now() + ms;
    while (chunks.length < n) {
      if (Date.now() > deadline)
        throw new Error(`got ${chunks.length} of ${n} chunks: ${chunks.join('|')}`);
      await new Promise<void>((r) => {
        waiter = r;
        setTimeout(r, 50);
      });
    }
    return chunks.splice(0, n);
  };
  return { socket, take, chunks };
}

async function wsClient(port: number) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/v3/watch`);
  const msgs: string[] = [];
  let waiter: (() => void) | null = null;
  ws.on('message', (d) => {
    msgs.push(d.toString());
    waiter?.();
  });
  await once(ws, 'open');
  const take = async (n: number, ms = 5000) => {
    const deadline = Date.now() + ms;
    while (msgs.length < n) {
      if (Date.now() > deadline) throw new Error(`got ${msgs.length} of ${n}: ${msgs.join('\n')}`);
      await new Promise<void>((r) => {
        waiter = r;
        setTimeout(r, 50);
      });
    }
    return msgs.splice(0, n);
  };
  return { ws, take, send: (o: unknown) => ws.send(JSON.stringify(o)) };
}

/** What each answer is: created/canceled/progress and its watch_id. */
function kind(text: string): string {
  const r = JSON.parse(text).result;
  const id = r.watch_id ?? '0';
  if (r.created && r.canceled) return `refused ${id}`;
  if (r.created) return `created ${id}`;
  if (r.canceled) return `canceled ${id}`;
  if (r.events) return `events ${id}`;
  return `progress ${id}`;
}

const CREATE_CREATE_CANCEL = [
  { create_request: { key: b64('c/1') } },
  { create_request: { key: b64('c/2') } },
  { cancel_request: { watch_id: 0 } },
];

t.test(
  'HTTP: create, create, cancel 0 in one body: created 0, created 1, canceled 0',
  async (t) => {
    const { port } = await serve(t);
    const body = CREATE_CREATE_CANCEL.map((o) => JSON.stringify(o)).join('\n');
    const c = rawPost(port, body);
    const got = await c.take(3);
    t.same(got.map(kind), ['created 0', 'created 1', 'canceled 0'], 'request order, as etcd');
    c.socket.destroy();
  },
);

t.test('websocket: create, create, cancel 0: created 0, created 1, canceled 0', async (t) => {
  const { port } = await serve(t);
  const c = await wsClient(port);
  for (const r of CREATE_CREATE_CANCEL) c.send(r);
  t.same((await c.take(3)).map(kind), ['created 0', 'created 1', 'canceled 0']);
  c.ws.close();
});

t.test('HTTP: every response is exactly one chunk: one JSON object and a newline', async (t) => {
  const { store, port } = await serve(t);
  store.put('a/0', 'x'); // 2
  const body = [
    { create_request: { key: b64('a/'), range_end: b64('a0'), start_revision: 1, watch_id: 5 } },
    { create_request: { key: b64('a/'), range_end: b64('a0'), prev_kv: true } },
    { progress_request: {} },
  ]
    .map((o) => JSON.stringify(o))
    .join(' ');
  const c = rawPost(port, body);
  const first = await c.take(4); // created 5, its replayed event, created 0, progress
  for (let i = 0; i < 20; i++) store.put(`a/${i}`, `v${i}`);
  const rest = await c.take(40); // 20 events for each watch
  const all = [...first, ...rest];
  for (const chunk of all) {
    t.ok(chunk.endsWith('\n'), 'the chunk ends in a newline');
    t.equal(chunk.indexOf('\n'), chunk.length - 1, 'and holds one line');
    t.ok(JSON.parse(chunk).result, 'which is one whole response');
  }
  const order = first.map(kind).filter((k) => !k.startsWith('events'));
  t.same(order, ['created 5', 'created 0', 'progress -1'], 'answers in request order');
  t.equal(kind(first[3]!), 'progress -1', 'the progress answer follows the replayed event');
  c.socket.destroy();
});

t.test('a stream holds at most --max-watches-per-stream watches; the stream goes on', async (t) => {
  const { store, port } = await serve(t, 3);
  for (const form of ['ws', 'http'] as const) {
    const creates = [0, 1, 2, 3].map((i) => ({ create_request: { key: b64(`k${i}`) } }));
    let take: (n: number) => Promise<string[]>;
    let send: (o: unknown) => void;
    let close: () => void;
    if (form === 'ws') {
      const c = await wsClient(port);
      for (const r of creates) c.send(r);
      ({ take, send } = c);
      close = () => c.ws.close();
    } else {
      // A body kept open: more requests later on the same stream.
      const req = http.request({ host: '127.0.0.1', port, path: '/v3/watch', method: 'POST' });
      const lines: string[] = [];
      req.on('response', (res) => {
        let partial = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          const parts = (partial + d).split('\n');
          partial = parts.pop()!;
          lines.push(...parts);
        });
      });
      req.on('error', () => {});
      for (const r of creates) req.write(JSON.stringify(r));
      take = async (n) => {
        for (let i = 0; i < 200 && lines.length < n; i++)
          await new Promise((r) => setTimeout(r, 25));
        return lines.splice(0, n);
      };
      send = (o) => req.write(JSON.stringify(o));
      close = () => req.destroy();
    }
    const answers = await take(4);
    t.same(answers.map(kind), ['created 0', 'created 1', 'created 2', 'refused -1'], form);
    const refused = JSON.parse(answers[3]!).result;
    t.match(
      refused.cancel_reason,
      /too many watches on this stream: at most 3/,
      `${form}: the clear reason`,
    );
    send({ cancel_request: { watch_id: 1 } });
    send({ create_request: { key: b64('k9') } });
    // etcd's rule for chosen ids: the lowest free one at or above a counter that only grows.
    t.same((await take(2)).map(kind), ['canceled 1', 'created 3'], `${form}: room again`);
    const rev = store.put('k9', 'v');
    const ev = JSON.parse((await take(1))[0]!).result;
    t.equal(ev.watch_id, '3', `${form}: the new watch sees events`);
    t.equal(ev.header.revision, String(rev));
    close();
  }
});

t.test(
  'a flood of progress requests: one answer each, at a revision already covered',
  async (t) => {
    const { store, port } = await serve(t);
    const c = await wsClient(port);
    const watches = 200;
    for (let i = 0; i < watches; i++)
      c.send({ create_request: { key: b64('p/'), range_end: b64('p0') } });
    await c.take(watches);
    // Writes and progress requests interleaved: each progress answer must follow every event at
    // or below its revision, for every watch.
    const floods = 10;
    const perFlood = 100;
    for (let f = 0; f < floods; f++) {
      store.put(`p/${f}`, 'v');
      for (let i = 0; i < perFlood; i++) c.send({ progress_request: {} });
    }
    const msgs = await c.take(floods * (perFlood + watches), 20_000);
    const seen = new Map<string, number>(); // watch id -> highest revision received
    let progress = 0;
    for (const m of msgs) {
      const r = JSON.parse(m).result;
      const rev = Number(r.header.revision);
      if (r.events) {
        seen.set(r.watch_id ?? '0', rev);
        continue;
      }
      progress++;
      t.equal(r.watch_id, '-1');
      let behind = 0;
      for (let i = 0; i < watches; i++) if ((seen.get(String(i)) ?? 1) < rev) behind++;
      if (behind > 0) t.fail(`progress at ${rev} came before ${behind} watches had it`);
    }
    t.equal(progress, floods * perFlood, 'one answer per request (as etcd 3.4)');
    c.ws.close();
  },
);

t.test("--max-watches-per-stream reaches a member's watch streams", async (t) => {
  const member = await startSingle(t.testdir(), { maxWatchesPerStream: 2 });
  t.teardown(() => member.stop());
  const port = Number(new URL(String(member.clientUrls[0])).port);
  const body = [0, 1, 2].map((i) => JSON.stringify({ create_request: { key: b64(`m${i}`) } }));
  const c = rawPost(port, body.join(''));
  const got = (await c.take(3)).map(kind);
  t.same(got, ['created 0', 'created 1', 'refused -1'], 'the third create is refused');
  c.socket.destroy();
});
