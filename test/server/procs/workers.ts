/**
 * A single member with `--workers N` as a child process (the CLI compiled by compile.ts), for
 * the tests of worker processes: its client URL, its log lines (the member's and its
 * workers', pino JSON on the same stdout), the workers' PIDs as the log tells them, and
 * which worker a keep-alive connection is served by (the worker's `etcetera_worker` gauge
 * on /metrics).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { freePorts, waitFor } from '../helpers.js';
import { status } from './http.js';

/** The member exited before it answered; `lines` are its output. */
export class MemberExited extends Error {
  constructor(
    readonly code: number | null,
    readonly lines: string[],
  ) {
    super(`the member exited (${code})`);
  }
}

export interface WorkersMember {
  url: string;
  child: ChildProcess;
  lines: string[];
  /** Slot → the PID of the worker that listens in it now, from the log. */
  pids(): Map<number, number>;
  /** Log records whose `msg` is `msg`. */
  records(msg: string): Record<string, unknown>[];
  /** SIGTERM, then the exit (the workers end with their member). */
  close(): Promise<void>;
}

export async function startWorkersMember(
  cli: string,
  root: string,
  workers: number,
  flags: string[] = [],
  /** A client port to use instead of a free one (a test of a port in use). */
  clientPort?: number,
): Promise<WorkersMember> {
  const [free, peer] = await freePorts(2);
  const client = clientPort ?? free;
  const url = `http://127.0.0.1:${client}`;
  const child = spawn(
    process.execPath,
    [
      cli,
      'serve',
      '--name',
      'w',
      '--data-dir',
      join(root, 'w'),
      '--listen-client-urls',
      url,
      '--listen-peer-urls',
      `http://127.0.0.1:${peer}`,
      '--heartbeat-interval',
      '50',
      '--election-timeout',
      '500',
      '--workers',
      String(workers),
      ...flags,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: string[] = [];
  let partial = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    const all = partial + chunk.toString('utf8');
    const parts = all.split('\n');
    partial = parts.pop() ?? '';
    for (const l of parts) if (l !== '') lines.push(l);
  });
  child.stderr?.on('data', (chunk: Buffer) => lines.push(`stderr: ${chunk.toString('utf8')}`));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const records = (msg: string) =>
    lines.flatMap((l) => {
      try {
        const r = JSON.parse(l) as Record<string, unknown>;
        return r.msg === msg ? [r] : [];
      } catch {
        return [];
      }
    });
  const m: WorkersMember = {
    url,
    child,
    lines,
    records,
    pids: () => {
      const out = new Map<number, number>();
      for (const r of records('worker listening')) out.set(Number(r.worker), Number(r.pid));
      return out;
    },
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
  try {
    await waitFor(
      'the member to answer',
      async () => {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new MemberExited(child.exitCode, lines);
        return (await status(url)) !== undefined;
      },
      90_000,
    );
  } catch (e) {
    await m.close();
    if (e instanceof MemberExited) throw e;
    throw new Error(`${(e as Error).message}\n${lines.join('\n')}`);
  }
  return m;
}

/** An HTTP/1.1 agent holding at most one connection, kept alive: one worker serves it all. */
export function oneConnection(): Agent {
  return new Agent({ keepAlive: true, maxSockets: 1 });
}

/** One request over `agent`; the body as text. */
export function call(
  agent: Agent,
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { method, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** The PID of the worker serving `agent`'s connection (its gauge on /metrics). */
export async function servedBy(agent: Agent, base: string): Promise<number> {
  const r = await call(agent, base, 'GET', '/metrics');
  const m = /etcetera_worker\{[^}]*pid="(\d+)"[^}]*\} 1/.exec(r.text);
  if (m === null) throw new Error(`no etcetera_worker gauge in /metrics (status ${r.status})`);
  return Number(m[1]);
}
