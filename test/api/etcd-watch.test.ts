/**
 * etcd's /v3/watch wire forms (src/api/etcd/watch) on a bare node:http server on 127.0.0.1
 * and a ws server: the exact JSON etcd 3.4's gateway emits (shapes captured from a real etcd
 * 3.4.23), many watches per stream, errors, fragments, and a stalled socket cancelled with the
 * revision to resume from.
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import { JsonSplitter } from '../../src/api/etcd/watch/body.js';
import { decodeWatchRequest } from '../../src/api/etcd/watch/decode.js';
import { createEtcdWatchHandlers } from '../../src/api/etcd/watch/index.js';
import { isEtceteraError } from '../../src/errors.js';
import { Cacher } from '../../src/watchcache/cacher.js';
import type { WatchCacheOptions } from '../../src/watchcache/options.js';
import { MemoryStore } from '../watchcache/memory-store.js';

const HEADER = {
  clusterId: '15118495548433857066',
  memberId: '13668033151171901709',
  raftTerm: '2',
};
const H = (rev?: number) =>
  `{"cluster_id":"${HEADER.clusterId}","member_id":"${HEADER.memberId}",${rev === undefined ? '' : `"revision":"${rev}",`}"raft_term":"2"}`;
const b64 = (s: string) => Buffer.from(s).toString('base64');

async function serve(
  t: Test,
  cacheOptions: WatchCacheOptions = {},
  fragmentMaxBytes?: number,
  highWaterBytes = 16 * 1024,
) {
  const store = new MemoryStore();
  const cacher = new Cacher(store, cacheOptions);
  const watch = createEtcdWatchHandlers({
    cacher,
    header: () => HEADER,
    fragmentMaxBytes,
    highWaterBytes,
  });
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

/** A streaming POST /v3/watch: responses split into lines as they arrive. */
function post(port: number, body: string) {
  const lines: string[] = [];
  let partial = '';
  let waiter: (() => void) | null = null;
  const req = http.request({
    host: '127.0.0.1',
    port,
    path: '/v3/watch',
    method: 'POST',
    agent: false,
  });
  const response = new Promise<http.IncomingMessage>((resolve) => {
    req.on('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        partial += d;
        const parts = partial.split('\n');
        partial = parts.pop()!;
        lines.push(...parts);
        waiter?.();
      });
      res.on('end', () => {
        if (partial) lines.push(partial);
        waiter?.();
      });
      resolve(res);
    });
  });
  req.on('error', () => {});
  req.end(body);
  const take = async (n: number, ms = 3000): Promise<string[]> => {
    const deadline = Date.now() + ms;
    while (lines.length < n) {
      if (Date.now() > deadline)
        throw new Error(`got ${lines.length} of ${n}: ${lines.join('\n')}`);
      await new Promise<void>((r) => {
        waiter = r;
        setTimeout(r, 50);
      });
    }
    return lines.splice(0, n);
  };
  return { req, response, take, lines };
}

t.test('HTTP: created, events with prev_kv, exactly as etcd 3.4 prints them', async (t) => {
  const { store, port } = await serve(t);
  store.put('foo', 'bar'); // rev 2
  const w = post(port, JSON.stringify({ create_request: { key: b64('foo'), prev_kv: true } }));
  const res = await w.response;
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'application/json');
  t.same(await w.take(1), [`{"result":{"header":${H(2)},"created":true}}`]);
  store.put('foo', 'baz');
  store.delete('foo');
  t.same(await w.take(2), [
    `{"result":{"header":${H(3)},"events":[{"kv":{"key":"Zm9v","create_revision":"2","mod_revision":"3","version":"2","value":"YmF6"},"prev_kv":{"key":"Zm9v","create_revision":"2","mod_revision":"2","version":"1","value":"YmFy"}}]}}`,
    `{"result":{"header":${H(4)},"events":[{"type":"DELETE","kv":{"key":"Zm9v","mod_revision":"4"},"prev_kv":{"key":"Zm9v","create_revision":"2","mod_revision":"3","version":"2","value":"YmF6"}}]}}`,
  ]);
  w.req.destroy();
});

t.test('HTTP: several requests in one body; history replay; progress', async (t) => {
  const { store, port } = await serve(t);
  store.put('k1', 'v1'); // 2
  store.put('k2', 'v2'); // 3
  const body = [
    { create_request: { key: b64('k'), range_end: b64('l'), start_revision: '2', watch_id: '7' } },
    { create_request: { key: b64('a') } },
    { progress_request: {} },
  ]
    .map((o) => JSON.stringify(o))
    .join(' ');
  const w = post(port, body);
  const got = await w.take(5);
  // Responses of one watch are in order; different watches interleave as they are ready.
  t.same(byWatch(got), {
    '7': [
      `{"result":{"header":${H(3)},"watch_id":"7","created":true}}`,
      `{"result":{"header":${H(2)},"watch_id":"7","events":[{"kv":{"key":"azE=","create_revision":"2","mod_revision":"2","version":"1","value":"djE="}}]}}`,
      `{"result":{"header":${H(3)},"watch_id":"7","events":[{"kv":{"key":"azI=","create_revision":"3","mod_revision":"3","version":"1","value":"djI="}}]}}`,
    ],
    '0': [`{"result":{"header":${H(3)},"created":true}}`],
    '-1': [`{"result":{"header":${H(3)},"watch_id":"-1"}}`],
  });
  t.equal(
    got.at(-1),
    `{"result":{"header":${H(3)},"watch_id":"-1"}}`,
    'progress after all of them',
  );
  w.req.destroy();
});

/** Lines grouped by watch_id (0 when absent), each group in arrival order. */
function byWatch(lines: string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const l of lines) {
    const id = JSON.parse(l).result.watch_id ?? '0';
    (out[id] ??= []).push(l);
  }
  return out;
}

t.test('HTTP: a body kept open streams more requests at any time', async (t) => {
  const { store, port } = await serve(t);
  const lines: string[] = [];
  const req = http.request({
    host: '127.0.0.1',
    port,
    path: '/v3/watch',
    method: 'POST',
    agent: false,
  });
  req.on('error', () => {});
  req.on('response', (res) => {
    res.setEncoding('utf8');
    let partial = '';
    res.on('data', (d: string) => {
      const parts = (partial + d).split('\n');
      partial = parts.pop()!;
      lines.push(...parts);
    });
  });
  const until = async (n: number) => {
    for (let i = 0; i < 300 && lines.length < n; i++) await new Promise((r) => setTimeout(r, 10));
    return lines.length;
  };
  req.write(JSON.stringify({ create_request: { key: b64('a'), watch_id: 1 } }));
  t.equal(await until(1), 1);
  req.write(`${JSON.stringify({ create_request: { key: b64('b'), watch_id: 2 } }).slice(0, 10)}`);
  req.write(`${JSON.stringify({ create_request: { key: b64('b'), watch_id: 2 } }).slice(10)}\n`);
  t.equal(await until(2), 2);
  store.put('b', 'x');
  t.equal(await until(3), 3);
  t.same(JSON.parse(lines[2]!).result.watch_id, '2');
  req.write(JSON.stringify({ cancel_request: { watch_id: 1 } }));
  t.equal(await until(4), 4);
  t.same(JSON.parse(lines[3]!).result, { header: JSON.parse(H(2)), watch_id: '1', canceled: true });
  req.destroy();
});

t.test('HTTP: compacted start, duplicate id, empty range (etcd 3.4 shapes)', async (t) => {
  const { store, port } = await serve(t);
  for (let i = 0; i < 8; i++) store.put(`k${i}`, 'v');
  store.compact(6);
  const body = [
    { create_request: { key: b64('k'), range_end: b64('l'), start_revision: 5, watch_id: 7 } },
    { create_request: { key: b64('x'), watch_id: 1 } },
    { create_request: { key: b64('x'), watch_id: '1' } },
    { create_request: { key: b64('b'), range_end: b64('a') } },
  ]
    .map((o) => JSON.stringify(o))
    .join('\n');
  const w = post(port, body);
  const got = await w.take(5);
  t.same(
    [...got].sort(),
    [
      `{"result":{"header":${H(9)},"watch_id":"7","created":true}}`,
      `{"result":{"header":${H()},"watch_id":"7","canceled":true,"compact_revision":"6"}}`,
      `{"result":{"header":${H(9)},"watch_id":"1","created":true}}`,
      `{"result":{"header":${H(9)},"watch_id":"-1","created":true,"canceled":true,"cancel_reason":"mvcc: duplicate watch ID provided on the WatchStream"}}`,
      `{"result":{"header":${H(9)},"watch_id":"-1","created":true,"canceled":true,"cancel_reason":"mvcc: watcher range is empty"}}`,
    ].sort(),
  );
  t.equal(
    got[0],
    `{"result":{"header":${H(9)},"watch_id":"7","created":true}}`,
    'created comes first',
  );
  w.req.destroy();
});

t.test('HTTP: bad bodies are refused with etcd error bodies; nothing is created', async (t) => {
  const { cacher, port } = await serve(t);
  const bad = post(port, 'nope');
  const res = await bad.response;
  t.equal(res.statusCode, 400);
  const [text] = await bad.take(1);
  t.match(JSON.parse(text!), { code: 3, message: /not valid JSON/ });
  const b64bad = post(port, JSON.stringify({ create_request: { key: '!!' } }));
  const [t2] = await b64bad.take(1);
  t.match(JSON.parse(t2!), { code: 3, message: /illegal base64 data at input byte 0/ });
  const unknown = post(port, JSON.stringify({ create_request: { key: b64('a'), colour: 1 } }));
  const [t3] = await unknown.take(1);
  t.match(JSON.parse(t3!), { code: 3, message: /unknown request field: create_request.colour/ });
  const get = await new Promise<http.IncomingMessage>((resolve) =>
    http.get({ host: '127.0.0.1', port, path: '/v3/watch', agent: false }, resolve),
  );
  t.equal(get.statusCode, 405);
  get.resume();
  t.equal(cacher.stats().watchers, 0);
});

t.test('HTTP: a client that goes away takes its watchers with it', async (t) => {
  const { cacher, port } = await serve(t);
  const w = post(port, JSON.stringify({ create_request: { key: b64('a'), watch_id: 3 } }));
  await w.take(1);
  t.equal(cacher.stats().watchers, 1);
  w.req.destroy();
  for (let i = 0; i < 50 && cacher.stats().watchers > 0; i++)
    await new Promise((r) => setTimeout(r, 10));
  t.equal(cacher.stats().watchers, 0);
});

t.test('HTTP: fragment splits one huge revision; without it, one response', async (t) => {
  const { store, port } = await serve(t, {}, 2000);
  const frag = post(
    port,
    JSON.stringify({ create_request: { key: b64('f/'), range_end: b64('f0'), fragment: true } }),
  );
  const whole = post(
    port,
    JSON.stringify({ create_request: { key: b64('f/'), range_end: b64('f0') } }),
  );
  await frag.take(1);
  await whole.take(1);
  store.txn(
    Array.from({ length: 10 }, (_, i) => ({
      op: 'put' as const,
      key: `f/${i}`,
      value: 'x'.repeat(500),
    })),
  );
  const one = JSON.parse((await whole.take(1))[0]!);
  t.equal(one.result.events.length, 10);
  t.notOk(one.result.fragment);
  const parts: { result: { fragment?: boolean; events: unknown[] } }[] = [];
  while (parts.length === 0 || parts.at(-1)!.result.fragment)
    parts.push(JSON.parse((await frag.take(1))[0]!));
  t.ok(parts.length > 1, `${parts.length} fragments`);
  t.ok(
    parts.slice(0, -1).every((p) => p.result.fragment === true),
    'all but the last say fragment',
  );
  t.equal(
    parts.reduce((n, p) => n + p.result.events.length, 0),
    10,
  );
  for (const w of [frag, whole]) w.req.destroy();
});

/** A websocket client collecting messages. */
async function wsClient(port: number) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/v3/watch`);
  const msgs: string[] = [];
  let waiter: (() => void) | null = null;
  ws.on('message', (d) => {
    msgs.push(d.toString());
    waiter?.();
  });
  await once(ws, 'open');
  const take = async (n: number, ms = 3000) => {
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
  return { ws, take, msgs, send: (o: unknown) => ws.send(JSON.stringify(o)) };
}

t.test('websocket: many watches, created and cancelled at any time, progress', async (t) => {
  const { store, port, cacher } = await serve(t);
  const c = await wsClient(port);
  c.send({ create_request: { key: b64('a'), watch_id: 1, filters: ['NOPUT'] } });
  c.send({ create_request: { key: b64('a'), watch_id: 2, prev_kv: true } });
  c.send({ create_request: { key: b64('x'), start_revision: 1 } });
  t.same(await c.take(3), [
    `{"result":{"header":${H(1)},"watch_id":"1","created":true}}`,
    `{"result":{"header":${H(1)},"watch_id":"2","created":true}}`,
    `{"result":{"header":${H(1)},"created":true}}`,
  ]);
  store.put('a', '1');
  store.delete('a');
  const events = await c.take(3);
  t.same(byWatch(events), {
    '2': [
      `{"result":{"header":${H(2)},"watch_id":"2","events":[{"kv":{"key":"YQ==","create_revision":"2","mod_revision":"2","version":"1","value":"MQ=="}}]}}`,
      `{"result":{"header":${H(3)},"watch_id":"2","events":[{"type":"DELETE","kv":{"key":"YQ==","mod_revision":"3"},"prev_kv":{"key":"YQ==","create_revision":"2","mod_revision":"2","version":"1","value":"MQ=="}}]}}`,
    ],
    '1': [
      `{"result":{"header":${H(3)},"watch_id":"1","events":[{"type":"DELETE","kv":{"key":"YQ==","mod_revision":"3"}}]}}`,
    ],
  });
  c.send({ progress_request: {} });
  t.same(await c.take(1), [`{"result":{"header":${H(3)},"watch_id":"-1"}}`]);
  c.send({ cancel_request: { watch_id: 1 } });
  c.send({ cancel_request: { watch_id: '2' } });
  c.send({ cancel_request: { watch_id: 99 } });
  t.same(await c.take(2), [
    `{"result":{"header":${H(3)},"watch_id":"1","canceled":true}}`,
    `{"result":{"header":${H(3)},"watch_id":"2","canceled":true}}`,
  ]);
  c.send({ create_request: { key: b64('a'), watch_id: 1, progress_notify: true } });
  t.same(
    await c.take(1),
    [`{"result":{"header":${H(3)},"watch_id":"1","created":true}}`],
    'id 1 is free again',
  );
  cacher.progressTickUnsafe();
  t.same(await c.take(1), [`{"result":{"header":${H(3)},"watch_id":"1"}}`], 'progress_notify');
  t.equal(cacher.stats().watchers, 2);
  c.ws.close();
  await once(c.ws, 'close');
  for (let i = 0; i < 50 && cacher.stats().watchers > 0; i++)
    await new Promise((r) => setTimeout(r, 10));
  t.equal(cacher.stats().watchers, 0, 'closing the socket cancels its watches');
});

t.test('websocket: invalid JSON gets an error and the socket closes', async (t) => {
  const { port } = await serve(t);
  const c = await wsClient(port);
  c.ws.send('notjson');
  const [err] = await c.take(1);
  t.match(JSON.parse(err!), { error: { grpc_code: 3, http_code: 400 } });
  const [code] = (await once(c.ws, 'close')) as [number];
  t.equal(code, 1007);
});

t.test(
  'a stalled socket is cancelled with the revision to resume from; others read on',
  async (t) => {
    const { store, port, cacher } = await serve(
      t,
      { watcherBufferBytes: 512 * 1024, slowBudgetMaxMs: 0 },
      undefined,
      256 * 1024,
    );
    const stalled = post(
      port,
      JSON.stringify({ create_request: { key: b64('s/'), range_end: b64('s0') } }),
    );
    const reader = await wsClient(port);
    reader.send({ create_request: { key: b64('s/'), range_end: b64('s0') } });
    await stalled.take(1);
    await reader.take(1);
    const res = await stalled.response;
    res.pause(); // stop reading: the socket fills, then the watcher's own queue
    // ~10 MB in all: more than the kernel's socket buffers take for a reader that does not read.
    const value = 'v'.repeat(16_000);
    const writes = 600;
    for (let i = 0; i < writes; i++) {
      store.put(`s/${i % 10}`, value);
      if (i % 5 === 4) await new Promise((r) => setTimeout(r, 1));
    }
    const got = await reader.take(writes, 20_000);
    t.equal(got.length, writes, 'the reading socket got every event');
    t.ok(
      got.every((m, i) => JSON.parse(m).result.header.revision === String(i + 2)),
      'in order',
    );
    t.equal(cacher.stats().watchers, 1, 'the stalled watcher was cancelled');
    res.resume();
    const lines: string[] = [];
    while (!lines.at(-1)?.includes('"canceled":true'))
      lines.push(...(await stalled.take(1, 10_000)));
    const cancel = JSON.parse(lines.at(-1)!).result;
    const m = /resume from revision (\d+)/.exec(cancel.cancel_reason);
    t.ok(m, cancel.cancel_reason);
    const resume = Number(m![1]);
    const revisions = lines.slice(0, -1).map((l) => Number(JSON.parse(l).result.header.revision));
    t.same(
      revisions,
      Array.from({ length: revisions.length }, (_, i) => i + 2),
      'what it got is a gapless prefix',
    );
    t.equal(resume, revisions.length + 2, 'and it resumes right after it');
    t.equal(
      Number(cancel.header.revision),
      resume - 1,
      'the cancel header says everything up to there was sent',
    );
    stalled.req.destroy();
  },
);

t.test('request decoding and the body splitter', async (t) => {
  t.same(
    decodeWatchRequest(
      '{"createRequest":{"key":"YQ==","startRevision":"5","filters":[1],"watchId":-3}}',
    ),
    {
      type: 'create',
      create: {
        key: Uint8Array.from([0x61]),
        rangeEnd: undefined,
        startRevision: 5,
        progressNotify: false,
        filters: ['NODELETE'],
        prevKv: false,
        watchId: -3,
        fragment: false,
      },
    },
  );
  t.same(decodeWatchRequest('{}'), { type: 'none' });
  t.same(decodeWatchRequest('null'), { type: 'none' });
  t.same(decodeWatchRequest('{"cancel_request":{"watch_id":"4"}}'), { type: 'cancel', watchId: 4 });
  for (const bad of [
    '{"create_request":{"filters":["NOPE"]}}',
    '{"create_request":{"start_revision":1.5}}',
    '[]',
  ]) {
    let error: unknown;
    try {
      decodeWatchRequest(bad);
    } catch (e) {
      error = e;
    }
    t.ok(isEtceteraError(error, 'ERR_BAD_FIELD'), `${bad}: ${error}`);
  }
  const s = new JsonSplitter(100);
  t.same(s.push(Buffer.from('{"a":"}{"} nu')), ['{"a":"}{"}']);
  t.same(s.push(Buffer.from('ll {"b":[1,{')), ['null']);
  t.notOk(s.atBoundary());
  t.same(s.push(Buffer.from('}]}')), ['{"b":[1,{}]}']);
  t.ok(s.atBoundary());
  t.throws(() => s.push(Buffer.from('x')), /not valid JSON/);
  t.throws(() => new JsonSplitter(10).push(Buffer.from('{"aaaaaaaaaaaaaaa')), /too large/);
});
