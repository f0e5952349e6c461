/**
 * A Kubernetes face over a real store: the MemberApi double of test/api (the store, no Raft)
 * with the face mounted on an express app, served on 127.0.0.1, websockets included.
 * `raw` reads the whole keyspace so tests can show a refused request stored nothing.
 */
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { type KubeFace, type MountOptions, mountKubernetes } from '../../src/api/k8s/index.js';
import { Cacher } from '../../src/watchcache/index.js';
import { StoreMember } from '../api/store-member.js';

export interface KubeServer {
  url: string;
  port: number;
  member: StoreMember;
  kube: KubeFace;
  server: Server;
  /** Every key and value of the store, as text (for before/after comparisons). */
  raw(): Promise<string[]>;
  close(): Promise<void>;
}

export async function startKube(
  dir: string,
  options: MountOptions & {
    maxRequestBytes?: number;
    /** A watch cache of the test's making (a stepped scheduler, say). */
    makeCacher?: (member: StoreMember) => Cacher;
    /** A watch cache whose window holds this few events (watches then replay from the store). */
    windowMaxEvents?: number;
    /** Serve https with this key and certificate (PEM): kubectl sends tokens only over TLS. */
    tls?: { key: string; cert: string };
  } = {},
): Promise<KubeServer> {
  const member = await StoreMember.open({ dir, maxRequestBytes: options.maxRequestBytes });
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const { makeCacher, windowMaxEvents, tls, ...mount } = options;
  const cacher =
    makeCacher?.(member) ??
    (windowMaxEvents === undefined
      ? undefined
      : new Cacher(member.watchSource, { windowMaxEvents }));
  const kube = mountKubernetes(app, member, { ...mount, ...(cacher ? { cacher } : {}) });
  app.use((_req, res) => {
    res.status(404).json({ error: 'not found' });
  });
  const server = tls ? createHttpsServer(tls, app) : createServer(app);
  server.on('upgrade', (req, socket, head) => {
    if (!kube.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await kube.ready;
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    member,
    kube,
    server,
    async raw() {
      const r = await member.store.range({ key: Uint8Array.of(0), rangeEnd: Uint8Array.of(0) });
      return r.kvs.map(
        (kv) =>
          `${Buffer.from(kv.key).toString()}=${Buffer.from(kv.value).toString()}@${kv.modRevision}`,
      );
    },
    async close() {
      await kube.close();
      cacher?.close();
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await member.close();
    },
  };
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
  body: any;
}

/** One request; the body is JSON-encoded unless it is a string. */
export async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + path, init);
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

export function pod(
  name: string,
  extra: Record<string, unknown> = {},
  labels: Record<string, string> = {},
) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: { containers: [{ name: 'c', image: 'nginx' }] },
    ...extra,
  };
}
