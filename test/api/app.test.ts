/**
 * The app around the routes: OPTIONS, metrics, health, how member failures are
 * answered (request errors, stream errors, bugs), what reaches the member, and the router
 * mounted beside another face.
 */
import { createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import express from 'express';
import t, { type Test } from 'tap';
import { WebSocket } from 'ws';
import { createRouter } from '../../src/api/index.js';
import { EtceteraError } from '../../src/errors.js';
import type { RangeRequest } from '../../src/store/types.js';
import { send } from './servers.js';
import { StoreMember, serveApi } from './store-member.js';

const b = (s: string) => Buffer.from(s).toString('base64');

async function setup(t: Test, options = {}) {
  const member = await StoreMember.open({ dir: t.testdir() });
  const errors: object[] = [];
  const api = await serveApi(member, { logger: { error: (o) => errors.push(o) }, ...options });
  t.teardown(async () => {
    await api.close();
    await member.close();
  });
  return { member, api, url: api.url, errors };
}

t.test('no CORS headers unless --cors (access.test.ts); OPTIONS and wrong methods', async (t) => {
  const { url } = await setup(t);
  const r = await fetch(`${url}/v3/kv/range`, { method: 'POST', body: `{"key":"${b('a')}"}` });
  t.equal(r.headers.get('access-control-allow-origin'), null);
  t.equal(r.headers.get('content-type'), 'application/json');
  const pre = await fetch(`${url}/v3/kv/put`, { method: 'OPTIONS' });
  t.equal(pre.status, 200);
  const bad = await fetch(`${url}/v3/kv/put`, { method: 'GET' });
  t.equal(bad.status, 405);
  t.equal(bad.headers.get('allow'), 'POST');
});

t.test('metrics: the member registry with the API series', async (t) => {
  const { url } = await setup(t);
  await send(url, 'POST', '/v3/kv/put', `{"key":"${b('a')}","value":"${b('1')}"}`);
  await send(url, 'POST', '/v3/kv/put', '{}');
  const r = await fetch(`${url}/metrics`);
  t.match(r.headers.get('content-type'), /text\/plain/);
  const text = await r.text();
  t.match(text, /etcetera_api_requests_total\{route="\/v3\/kv\/put",code="200"\} 1/);
  t.match(text, /etcetera_api_requests_total\{route="\/v3\/kv\/put",code="400"\} 1/);
  t.match(text, /etcetera_api_request_duration_seconds_count\{route="\/v3\/kv\/put"\} 2/);
});

t.test('health: 200 {"health":"true"}, or 503 with the reason', async (t) => {
  const { url, member } = await setup(t);
  t.same(JSON.parse((await send(url, 'GET', '/health')).text), { health: 'true' });
  member.health = () => ({ health: false, reason: 'RAFT NO LEADER' });
  const r = await send(url, 'GET', '/health');
  t.equal(r.status, 503);
  t.same(JSON.parse(r.text), { health: 'false', reason: 'RAFT NO LEADER' });
});

t.test('member failures: etcd errors, stream errors and bugs', async (t) => {
  const { url, member, errors } = await setup(t);
  member.write = async () => {
    throw new EtceteraError('ERR_NO_LEADER');
  };
  const noLeader = await send(url, 'POST', '/v3/kv/put', `{"key":"${b('a')}"}`);
  t.equal(noLeader.status, 503);
  t.same(JSON.parse(noLeader.text), {
    error: 'etcdserver: no leader',
    message: 'etcdserver: no leader',
    code: 14,
  });

  member.leaseKeepAlive = async () => {
    throw new EtceteraError('ERR_TIMEOUT');
  };
  const ka = await send(url, 'POST', '/v3/lease/keepalive', '{"ID":5}');
  t.equal(ka.status, 503, 'a keepalive failure is a gateway stream error');
  t.same(JSON.parse(ka.text), {
    error: {
      grpc_code: 14,
      http_code: 503,
      message: 'etcdserver: request timed out',
      http_status: 'Service Unavailable',
    },
  });

  member.range = async () => {
    throw new TypeError('cannot read properties of undefined');
  };
  const bug = await send(url, 'POST', '/v3/kv/range', `{"key":"${b('a')}"}`);
  t.equal(bug.status, 500);
  t.same(JSON.parse(bug.text), {
    error: 'etcetera: internal error',
    message: 'etcetera: internal error',
    code: 2,
  });
  t.equal(errors.length, 1, 'the bug is logged, request errors are not');

  member.write = async () => ({
    header: member.header(),
    result: { op: 'noop', result: { revision: member.header().revision } },
  });
  t.equal(
    (await send(url, 'POST', '/v3/kv/put', `{"key":"${b('a')}"}`)).status,
    500,
    'an answer of the wrong kind is a bug',
  );
});

t.test('what reaches the member', async (t) => {
  const { url, member } = await setup(t);
  const seen: Array<{ request: RangeRequest; serializable: boolean | undefined }> = [];
  const range = member.range.bind(member);
  member.range = async (request, options) => {
    seen.push({ request, serializable: options?.serializable });
    return range(request);
  };
  await send(url, 'POST', '/v3/kv/range', `{"key":"${b('a')}","serializable":true,"limit":"3"}`);
  await send(url, 'POST', '/v3/kv/range', `{"key":"${b('a')}","rangeEnd":"${b('b')}"}`);
  t.equal(seen[0]?.serializable, true, 'serializable reads are asked for as such');
  t.equal(seen[0]?.request.limit, 3);
  t.equal(seen[1]?.serializable, false);
  t.same(seen[1]?.request.rangeEnd, new Uint8Array(Buffer.from('b')));

  const add = await send(
    url,
    'POST',
    '/v3/cluster/member/add',
    '{"peerURLs":["http://10.0.0.1:2380"],"isLearner":true}',
  );
  const added = JSON.parse(add.text) as { member: { ID: string; isLearner: boolean } };
  t.equal(added.member.isLearner, true);
  const promoted = await send(
    url,
    'POST',
    '/v3/cluster/member/promote',
    JSON.stringify({ ID: added.member.ID }),
  );
  t.equal(promoted.status, 200);
  const members = JSON.parse(promoted.text) as {
    members: Array<{ ID: string; isLearner?: boolean }>;
  };
  t.notOk(members.members.find((m) => m.ID === added.member.ID)?.isLearner, 'promoted');
});

t.test('maxRequestBytes: the option overrides the member', async (t) => {
  const { url } = await setup(t, { maxRequestBytes: 100 });
  const r = await send(
    url,
    'POST',
    '/v3/kv/put',
    JSON.stringify({ key: b('a'), value: b('x'.repeat(200)) }),
  );
  t.match(JSON.parse(r.text), { message: 'etcdserver: request is too large' });
});

t.test('the router beside another face: unknown paths fall through', async (t) => {
  const member = await StoreMember.open({ dir: t.testdir() });
  const app = express();
  app.use(createRouter(member));
  app.get('/apis', (_req, res) => void res.json({ other: true }));
  const server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await member.close();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.same(JSON.parse((await send(url, 'GET', '/apis')).text), { other: true });
  t.equal((await send(url, 'POST', '/v3/kv/range', `{"key":"${b('a')}"}`)).status, 200);
});

t.test('a client that leaves mid-body is not an error, and the server goes on', async (t) => {
  const { url, errors } = await setup(t);
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  socket.write('POST /v3/kv/put HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"key":');
  await new Promise((r) => setTimeout(r, 50));
  socket.destroy();
  await new Promise((r) => setTimeout(r, 50));
  t.same(errors, [], 'nothing logged');
  t.equal((await send(url, 'POST', '/v3/kv/range', `{"key":"${b('a')}"}`)).status, 200);
});

t.test('websocket watches through createEtcdApi.handleUpgrade', async (t) => {
  const { url } = await setup(t);
  const ws = new WebSocket(`${url.replace('http', 'ws')}/v3/watch`);
  const messages: Array<{ result?: { created?: boolean; events?: unknown[] } }> = [];
  ws.on('message', (d) => messages.push(JSON.parse(String(d))));
  await new Promise((r) => ws.once('open', r));
  ws.send(JSON.stringify({ create_request: { key: b('w'), range_end: b('x') } }));
  const until = async (n: number) => {
    for (let i = 0; i < 200 && messages.length < n; i++)
      await new Promise((r) => setTimeout(r, 10));
  };
  await until(1);
  t.equal(messages[0]?.result?.created, true, 'created');
  await send(url, 'POST', '/v3/kv/put', `{"key":"${b('w1')}","value":"${b('1')}"}`);
  await until(2);
  t.equal(messages[1]?.result?.events?.length, 1, 'the put arrives');
  ws.close();
  const other = new WebSocket(`${url.replace('http', 'ws')}/v3/elsewhere`);
  const refused = await new Promise((r) => {
    other.once('error', () => r(true));
    other.once('open', () => r(false));
  });
  t.equal(refused, true, 'other paths are not taken');
});

t.test(
  '/v3beta/ serves the same routes and watch as /v3/; /v3alpha/ is 404 as in etcd 3.4',
  async (t) => {
    const { url } = await setup(t);
    const put = await send(
      url,
      'POST',
      '/v3beta/kv/put',
      `{"key":"${b('a')}","value":"${b('1')}"}`,
    );
    t.equal(put.status, 200, put.text);
    const got = await send(url, 'POST', '/v3beta/kv/range', `{"key":"${b('a')}"}`);
    t.equal(JSON.parse(got.text).kvs[0].value, b('1'));
    t.equal((await send(url, 'POST', '/v3alpha/kv/range', `{"key":"${b('a')}"}`)).status, 404);
    // The HTTP watch stream under the beta prefix: its first message is the created response.
    const ac = new AbortController();
    const w = await fetch(`${url}/v3beta/watch`, {
      method: 'POST',
      body: `{"create_request":{"key":"${b('a')}"}}`,
      signal: ac.signal,
    });
    t.equal(w.status, 200);
    const reader = w.body?.getReader();
    const first = await reader?.read();
    t.match(Buffer.from(first?.value ?? []).toString(), /"created":true/);
    ac.abort();
    // And over websockets.
    const ws = new WebSocket(`${url.replace('http', 'ws')}/v3beta/watch`);
    const created = await new Promise<string>((resolve, reject) => {
      ws.once('open', () => ws.send(`{"create_request":{"key":"${b('a')}"}}`));
      ws.once('message', (m) => resolve(String(m)));
      ws.once('error', reject);
    });
    t.match(created, /"created":true/);
    ws.close();
  },
);
