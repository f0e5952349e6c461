/**
 * One server under test as a child process on 127.0.0.1 with its own temporary data directory
 * and ports: an etcetera member (`node <cli> serve` with etcd's flags) or a real etcd. Both get
 * the same flags, are ready when GET /health answers 200, and are stopped by PID (SIGTERM,
 * SIGKILL after a grace period), their data directory removed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopChild, track } from './children.js';

export const SYSTEMS = ['etcetera', 'etcd'] as const;
export type System = (typeof SYSTEMS)[number];

export interface ServerProcess {
  readonly system: System;
  readonly pid: number;
  /** http://127.0.0.1:<port> */
  readonly clientUrl: string;
  readonly port: number;
  /** Stops the process and removes its data directory. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** The built CLI (etcetera only). */
  cli: string;
  /** Directory for a V8 CPU profile of the member (etcetera only), written when it stops. */
  cpuProfDir?: string;
  /** The member's --workers (etcetera only). */
  workers?: number;
  readyTimeoutMs?: number;
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

/**
 * Starts a server, trying again (with new ports) when it exits before it is ready: a port
 * found free can be taken by another process on a shared machine before the server binds it.
 */
export async function startServer(system: System, options: StartOptions): Promise<ServerProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(system, options);
    } catch (e) {
      if (attempt >= 3 || !(e instanceof EarlyExit)) throw e;
    }
  }
}

class EarlyExit extends Error {}

async function startOnce(system: System, options: StartOptions): Promise<ServerProcess> {
  const dir = mkdtempSync(join(tmpdir(), `etcetera-fanout-${system}-`));
  const port = await freePort();
  const peer = await freePort();
  const flags = [
    '--name=bench',
    `--data-dir=${join(dir, 'data')}`,
    `--listen-client-urls=http://127.0.0.1:${port}`,
    `--advertise-client-urls=http://127.0.0.1:${port}`,
    `--listen-peer-urls=http://127.0.0.1:${peer}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
    `--initial-cluster=bench=http://127.0.0.1:${peer}`,
    '--log-level=error',
  ];
  let child: ChildProcess;
  if (system === 'etcd') {
    child = spawn('etcd', [...flags, '--logger=zap'], { stdio: 'ignore' });
  } else {
    const nodeArgs: string[] = [];
    if (options.cpuProfDir !== undefined) {
      mkdirSync(options.cpuProfDir, { recursive: true });
      nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${options.cpuProfDir}`);
    }
    const workers = options.workers !== undefined ? [`--workers=${options.workers}`] : [];
    child = spawn(process.execPath, [...nodeArgs, options.cli, 'serve', ...flags, ...workers], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  track(child);
  const clientUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopChild(child, 15_000);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitHealthy(clientUrl, child, options.readyTimeoutMs ?? 30_000);
  } catch (e) {
    await stop();
    throw e;
  }
  return { system, pid: child.pid!, clientUrl, port, stop };
}

async function waitHealthy(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new EarlyExit(
        `${url}: server exited (${child.exitCode ?? child.signalCode}) before it was ready`,
      );
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`${url} did not become healthy in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The store's current revision, read over the JSON API (etcd's gateway and etcetera alike). */
export async function currentRevision(clientUrl: string): Promise<number> {
  const res = await fetch(`${clientUrl}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from('\0').toString('base64'), count_only: true }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await res.json()) as { header?: { revision?: string } };
  if (res.status !== 200) throw new Error(`range: HTTP ${res.status} ${JSON.stringify(body)}`);
  return Number(body.header?.revision ?? 0);
}
