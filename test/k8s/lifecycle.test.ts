/**
 * The face's lifecycle: it starts on the first Kubernetes request (an etcd-only member never
 * writes anything under /registry/), and a start that fails (no leader yet) is a 503 Status
 * that the next request tries again.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import t from 'tap';
import { mountKubernetes } from '../../src/api/k8s/index.js';
import { EtceteraError } from '../../src/errors.js';
import type { MemberApi } from '../../src/server/types.js';
import { StoreMember } from '../api/store-member.js';
import { call } from './harness.js';

t.test('lazy start, and a failed start is tried again', async (t) => {
  const member = await StoreMember.open({ dir: t.testdir() });
  // The first load of the face (a range of the watch source) fails, as with no leader yet.
  let failReads = 1;
  const source = new Proxy(member.store, {
    get(target, prop) {
      if (prop === 'range') {
        return (...args: Parameters<typeof target.range>) => {
          if (failReads-- > 0) return Promise.reject(new EtceteraError('ERR_NO_LEADER'));
          return target.range(...args);
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const flaky = new Proxy(member, {
    get(target, prop, receiver) {
      if (prop === 'watchSource') return source;
      return Reflect.get(target, prop, receiver);
    },
  }) as MemberApi;
  const app = express();
  const kube = mountKubernetes(app, flaky);
  const server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(async () => {
    await kube.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await member.close();
  });
  t.equal(member.store.currentRevision, 1, 'nothing written before a Kubernetes request');
  const first = await call(base, 'GET', '/api/v1/namespaces');
  t.equal(first.status, 503);
  t.equal(first.body.reason, 'ServiceUnavailable');
  const second = await call(base, 'GET', '/api/v1/namespaces');
  t.equal(second.status, 200);
  t.same(
    second.body.items.map((n: { metadata: { name: string } }) => n.metadata.name),
    ['default', 'kube-node-lease', 'kube-public', 'kube-system'],
  );
});
