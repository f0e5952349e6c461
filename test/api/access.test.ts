/**
 * Browsers and DNS rebinding: a page from another origin can neither write nor read through
 * either face, a Host that is not one of the member's names is refused, websocket handshakes
 * included; clients that send no Origin (curl, etcd and Kubernetes clients), even posting
 * JSON with no Content-Type at all, work as before. --cors opens it to listed origins.
 */
import { request } from 'node:http';
import t, { type Test } from 'tap';
import { WebSocket } from 'ws';
import type { ApiOptions } from '../../src/api/index.js';
import { parseServeArgs } from '../../src/server/flags.js';
import { resolveConfig } from '../../src/server/index.js';
import { startSingle } from '../server/helpers.js';
import { StoreMember, serveApi } from './store-member.js';

const b = (s: string) => Buffer.from(s).toString('base64');

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request over a real socket with exactly these headers (no Content-Type unless given). */
function raw(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        text += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function setup(t: Test, options: ApiOptions = {}) {
  const member = await StoreMember.open({ dir: t.testdir() });
  const api = await serveApi(member, options);
  t.teardown(async () => {
    await api.close();
    await member.close();
  });
  return { member, url: api.url };
}

async function storedValue(url: string, key: string): Promise<string | undefined> {
  const r = await raw(url, 'POST', '/v3/kv/range', {}, `{"key":"${b(key)}"}`);
  const kv = JSON.parse(r.text).kvs?.[0];
  return kv ? Buffer.from(kv.value, 'base64').toString() : undefined;
}

const EVIL = 'http://evil.example';
const put = (k: string, v: string) => `{"key":"${b(k)}","value":"${b(v)}"}`;

t.test('a cross-origin text/plain POST is refused and writes nothing', async (t) => {
  const { url } = await setup(t);
  const r = await raw(
    url,
    'POST',
    '/v3/kv/put',
    { origin: EVIL, 'content-type': 'text/plain' },
    put('k', 'evil'),
  );
  t.equal(r.status, 403, r.text);
  t.match(JSON.parse(r.text), { code: 7, message: /Origin .*not allowed.*--cors/ });
  t.equal(r.headers['access-control-allow-origin'], undefined, 'no CORS header to read it with');
  t.equal(await storedValue(url, 'k'), undefined, 'the key was not written');
});

t.test('a cross-origin read is refused; answers carry no CORS header by default', async (t) => {
  const { url } = await setup(t);
  t.equal((await raw(url, 'POST', '/v3/kv/put', {}, put('k', 'secret'))).status, 200);
  const r = await raw(url, 'POST', '/v3/kv/range', { origin: EVIL }, `{"key":"${b('k')}"}`);
  t.equal(r.status, 403);
  t.notMatch(r.text, b('secret'));
  const pre = await raw(url, 'OPTIONS', '/v3/kv/range', {
    origin: EVIL,
    'access-control-request-method': 'POST',
  });
  t.equal(pre.status, 403, 'a preflight from a foreign origin is refused');
  const plain = await raw(url, 'GET', '/version');
  t.equal(plain.status, 200);
  t.equal(plain.headers['access-control-allow-origin'], undefined);
});

t.test('clients without Origin and without Content-Type keep working', async (t) => {
  const { url } = await setup(t);
  const w = await raw(url, 'POST', '/v3/kv/put', {}, put('k', 'v'));
  t.equal(w.status, 200, w.text);
  t.equal(await storedValue(url, 'k'), 'v');
  const form = await raw(
    url,
    'POST',
    '/v3/kv/put',
    { 'content-type': 'application/x-www-form-urlencoded' },
    put('k', 'curl -d'),
  );
  t.equal(form.status, 200, "curl -d's form type still reads as JSON");
  t.equal(await storedValue(url, 'k'), 'curl -d');
  const port = new URL(url).port;
  for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, '10.1.2.3']) {
    t.equal((await raw(url, 'GET', '/health', { host })).status, 200, `Host ${host}`);
  }
  const same = await raw(url, 'POST', '/v3/kv/range', { origin: url }, `{"key":"${b('k')}"}`);
  t.equal(same.status, 200, "the member's own origin is not a foreign one");
});

t.test('a Host that is not one of the member names is refused (DNS rebinding)', async (t) => {
  const { url } = await setup(t);
  const port = new URL(url).port;
  for (const host of [`evil.example:${port}`, 'evil.example', 'localhost.evil.example']) {
    const r = await raw(url, 'POST', '/v3/kv/put', { host }, put('k', 'rebound'));
    t.equal(r.status, 403, host);
    t.match(JSON.parse(r.text), { message: /Host .*--host-whitelist/ });
  }
  // Same-origin from the rebound page's point of view: Origin and Host agree, still refused.
  const r = await raw(url, 'POST', '/v3/kv/put', {
    host: `evil.example:${port}`,
    origin: `http://evil.example:${port}`,
  });
  t.equal(r.status, 403);
  t.equal(await storedValue(url, 'k'), undefined, 'nothing was written');
  const k = await raw(url, 'GET', '/api/v1/namespaces', { host: 'evil.example' });
  t.equal(k.status, 403);
  t.match(JSON.parse(k.text), { kind: 'Status', reason: 'Forbidden', code: 403 });
});

t.test('the Kubernetes face: a browser page may not write, kubectl-like clients may', async (t) => {
  const { url } = await setup(t);
  const ns = JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'web' } });
  const r = await raw(
    url,
    'POST',
    '/api/v1/namespaces',
    { origin: EVIL, 'content-type': 'text/plain' },
    ns,
  );
  t.equal(r.status, 403, r.text);
  t.match(JSON.parse(r.text), { kind: 'Status', status: 'Failure', code: 403 });
  t.equal((await raw(url, 'GET', '/api/v1/namespaces/web')).status, 404, 'not created');
  const ok = await raw(
    url,
    'POST',
    '/api/v1/namespaces',
    { 'content-type': 'application/json' },
    ns,
  );
  t.equal(ok.status, 201, ok.text);
});

t.test('websocket handshakes from a foreign origin or host are refused', async (t) => {
  const { url } = await setup(t);
  const wsUrl = `${url.replace('http', 'ws')}/v3/watch`;
  const refused = (headers: Record<string, string>) =>
    new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(wsUrl, { headers });
      ws.once('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        ws.terminate();
      });
      ws.once('open', () => {
        ws.close();
        reject(new Error('the handshake was accepted'));
      });
      ws.once('error', () => undefined);
    });
  t.equal(await refused({ origin: EVIL }), 403);
  t.equal(await refused({ host: 'evil.example' }), 403);
  const created = await new Promise<string>((resolve, reject) => {
    const ws = new WebSocket(wsUrl);
    ws.once('open', () => ws.send(`{"create_request":{"key":"${b('a')}"}}`));
    ws.once('message', (m) => {
      resolve(String(m));
      ws.close();
    });
    ws.once('error', reject);
  });
  t.match(created, /"created":true/, 'a client without Origin watches as before');
});

t.test('--cors lets listed origins in, with CORS headers and preflight', async (t) => {
  const DASH = 'https://dash.example:8443';
  const { url } = await setup(t, { access: { corsOrigins: [DASH] } });
  const w = await raw(
    url,
    'POST',
    '/v3/kv/put',
    { origin: DASH, 'content-type': 'text/plain' },
    put('k', 'dash'),
  );
  t.equal(w.status, 200, w.text);
  t.equal(w.headers['access-control-allow-origin'], DASH);
  t.equal(await storedValue(url, 'k'), 'dash');
  const pre = await raw(url, 'OPTIONS', '/api/v1/namespaces', {
    origin: DASH,
    'access-control-request-method': 'PATCH',
    'access-control-request-headers': 'content-type',
  });
  t.equal(pre.status, 200);
  t.equal(pre.headers['access-control-allow-origin'], DASH);
  t.match(pre.headers['access-control-allow-methods'], /PATCH/);
  t.match(pre.headers['access-control-allow-headers'], /content-type/);
  t.equal((await raw(url, 'POST', '/v3/kv/put', { origin: EVIL }, put('k', 'x'))).status, 403);
  t.equal(await storedValue(url, 'k'), 'dash');
});

t.test("--cors '*' allows any origin", async (t) => {
  const { url } = await setup(t, { access: { corsOrigins: ['*'] } });
  const r = await raw(url, 'POST', '/v3/kv/put', { origin: EVIL }, put('k', 'any'));
  t.equal(r.status, 200);
  t.equal(r.headers['access-control-allow-origin'], '*');
});

t.test('the flags reach a member: --cors and --host-whitelist', async (t) => {
  const input = parseServeArgs(['--cors', 'https://dash.example', '--host-whitelist', 'etcd.lan']);
  const member = await startSingle(t.testdir(), input);
  t.teardown(() => member.stop());
  const url = String(member.clientUrls[0]).replace(/\/$/, '');
  t.equal((await raw(url, 'GET', '/health', { host: 'etcd.lan:2379' })).status, 200);
  t.equal((await raw(url, 'GET', '/health', { host: 'evil.example' })).status, 403);
  const r = await raw(url, 'GET', '/version', { origin: 'https://dash.example' });
  t.equal(r.headers['access-control-allow-origin'], 'https://dash.example');
  t.equal((await raw(url, 'GET', '/version', { origin: EVIL })).status, 403);
});

t.test('bad --cors and --host-whitelist values are refused before anything starts', async (t) => {
  for (const cors of ['dash.example', 'https://dash.example/path', 'ftp://x.example']) {
    t.throws(() => resolveConfig({ cors }), { code: 'ERR_INVALID_ARGUMENT' }, cors);
  }
  t.throws(() => resolveConfig({ hostWhitelist: 'a b' }), { code: 'ERR_INVALID_ARGUMENT' });
  t.throws(() => resolveConfig({ hostWhitelist: 'evil.example:80' }), {
    code: 'ERR_INVALID_ARGUMENT',
  });
  const c = resolveConfig({ cors: 'https://A.example:8443, *', hostWhitelist: 'Etcd.LAN,[::2]' });
  t.same(c.cors, ['https://a.example:8443', '*']);
  t.same(c.hostWhitelist, ['etcd.lan', '[::2]']);
  t.same(resolveConfig({}).cors, [], 'no CORS by default');
});
