/**
 * Both faces on one listener (createEtcdApi): the etcd JSON API and the Kubernetes API side by
 * side, /version answering for both, websocket watches of each face routed to it, and a
 * Kubernetes write visible to etcd readers under /registry/.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import WebSocket from 'ws';
import { createEtcdApi } from '../../src/api/index.js';
import { StoreMember } from '../api/store-member.js';
import { call, pod } from './harness.js';

t.test('etcd and Kubernetes faces share the client listener', async (t) => {
  const member = await StoreMember.open({ dir: t.testdir() });
  const api = createEtcdApi(member);
  const server = createServer(api.app);
  server.on('upgrade', (req, socket, head) => {
    if (!api.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(async () => {
    await api.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await member.close();
  });

  const v = await call(base, 'GET', '/version');
  t.match(v.body, { major: '1', minor: '32', etcdserver: '3.4.23', etcdcluster: '3.4.0' });
  const ws = new WebSocket(`${base.replace('http', 'ws')}/api/v1/namespaces/default/pods?watch=1`);
  const messages: string[] = [];
  ws.on('message', (m) => messages.push(String(m)));
  await new Promise((r) => ws.on('open', r));
  const created = await call(base, 'POST', '/api/v1/namespaces/default/pods', pod('p'));
  t.equal(created.status, 201);
  const key = Buffer.from('/registry/core/pods/default/p').toString('base64');
  const range = await call(base, 'POST', '/v3/kv/range', { key });
  t.equal(range.status, 200);
  t.equal(range.body.kvs.length, 1, 'the etcd face reads what the Kubernetes face wrote');
  t.equal(
    range.body.kvs[0].mod_revision,
    created.body.metadata.resourceVersion,
    'resourceVersion = mod_revision',
  );
  const until = Date.now() + 5000;
  while (messages.length < 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  t.equal(JSON.parse(messages[0] ?? '{}').type, 'ADDED');
  ws.close();
  t.equal((await call(base, 'GET', '/nope')).status, 404, 'other paths stay with the etcd face');
});
