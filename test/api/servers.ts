/**
 * The servers the API tests run against: the test double over the real store, a real
 * member (src/server) on loopback, and — when the binary is installed — a real etcd 3.4
 * started for the test with its own data dir and ports. Each starts fresh (revision 1).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import type { Server } from 'node:http';
import { createServer } from 'node:net';
import { resolveConfig } from '../../src/server/config.js';
import { silentLogger } from '../../src/server/logger.js';
import { Member } from '../../src/server/member.js';
import { StoreMember, serveApi } from './store-member.js';

export interface Target {
  name: string;
  url: string;
  close(): Promise<void>;
}

export async function startDouble(
  dir: string,
  o: { maxRequestBytes?: number } = {},
): Promise<Target & { member: StoreMember; server: Server }> {
  const member = await StoreMember.open({ dir, minLeaseTtl: 2, ...o });
  const api = await serveApi(member);
  return {
    name: 'etcetera (store double)',
    url: api.url,
    member,
    server: api.server,
    close: async () => {
      await api.close();
      await member.close();
    },
  };
}

export async function startMember(dir: string): Promise<Target & { member: Member }> {
  const config = resolveConfig({
    name: 'default',
    dataDir: dir,
    listenClientUrls: 'http://127.0.0.1:0',
    listenPeerUrls: 'http://127.0.0.1:0',
    initialAdvertisePeerUrls: 'http://127.0.0.1:1',
    initialCluster: 'default=http://127.0.0.1:1',
    heartbeatMs: 20,
    electionMs: 1000,
    logLevel: 'silent',
  });
  const member = await Member.start(config, { logger: silentLogger() });
  const url = String(member.clientUrls[0]).replace(/\/$/, '');
  await waitHealthy(url, 10_000);
  return { name: 'etcetera (member)', url, member, close: () => member.stop() };
}

/** Why a real etcd cannot run here, or undefined when it can. */
export function etcdUnavailable(): string | undefined {
  const r = spawnSync('etcd', ['--version'], { encoding: 'utf8' });
  if (r.error) return `etcd is not installed (${(r.error as NodeJS.ErrnoException).code})`;
  if (!/etcd Version: 3\.4\./.test(r.stdout)) return `etcd is not 3.4 (${r.stdout.split('\n')[0]})`;
  return undefined;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** A real etcd on loopback; pass the ports of an earlier run to restart it on its data dir. */
export async function startEtcd(
  dir: string,
  ports?: { client: number; peer: number },
): Promise<Target & { pid: number; ports: { client: number; peer: number } }> {
  const [client, peer] = ports ? [ports.client, ports.peer] : [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  const child: ChildProcess = spawn(
    'etcd',
    [
      '--name=default',
      `--data-dir=${dir}`,
      `--listen-client-urls=${url}`,
      `--advertise-client-urls=${url}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=default=${peerUrl}`,
      '--log-level=error',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await waitHealthy(url, 15_000);
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  return {
    name: 'etcd',
    url,
    pid: child.pid as number,
    ports: { client, peer },
    close: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export async function waitHealthy(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const r = await fetch(`${url}/health`);
      if (r.status === 200) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`${url} did not become healthy`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Sends one request and returns its status and text. */
export async function send(
  url: string,
  method: string,
  path: string,
  body?: string,
): Promise<{ status: number; text: string }> {
  const r = await fetch(
    `${url}${path}`,
    method === 'GET' ? { method } : { method, body: body ?? '' },
  );
  return { status: r.status, text: await r.text() };
}
