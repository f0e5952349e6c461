/** Shared helpers of the server tests: configs on ephemeral loopback ports, waiting, bytes. */

import { Writable } from 'node:stream';
import {
  type MemberConfig,
  type MemberConfigInput,
  resolveConfig,
} from '../../src/server/config.js';
import { createLogger, type Logger, silentLogger } from '../../src/server/logger.js';
import { Member, type MemberOptions } from '../../src/server/member.js';

export const enc = (s: string) => new Uint8Array(Buffer.from(s, 'utf8'));
export const dec = (b: Uint8Array) => Buffer.from(b).toString('utf8');

/** A single-member config on port 0 (client and peer), fast timers. */
export function singleConfig(dir: string, extra: MemberConfigInput = {}): MemberConfig {
  return resolveConfig({
    name: 'm1',
    dataDir: dir,
    listenClientUrls: 'http://127.0.0.1:0',
    listenPeerUrls: 'http://127.0.0.1:0',
    initialAdvertisePeerUrls: 'http://127.0.0.1:1',
    initialCluster: 'm1=http://127.0.0.1:1',
    heartbeatMs: 20,
    electionMs: 200,
    logLevel: 'silent',
    ...extra,
  });
}

export async function startSingle(
  dir: string,
  extra: MemberConfigInput = {},
  options: MemberOptions = {},
): Promise<Member> {
  return Member.start(singleConfig(dir, extra), { logger: silentLogger(), ...options });
}

export async function waitFor(
  what: string,
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  stepMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** `n` distinct free TCP ports on 127.0.0.1 (bound and released; fine on a quiet loopback). */
export async function freePorts(n: number): Promise<number[]> {
  const { createServer } = await import('node:net');
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<import('node:net').Server>((resolve, reject) => {
          const s = createServer();
          s.once('error', reject);
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as import('node:net').AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** A pino logger that keeps its lines (as parsed objects) for assertions. */
export function capturingLogger(name: string): {
  logger: Logger;
  lines: Array<Record<string, unknown>>;
} {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n'))
        if (l.trim() !== '') lines.push(JSON.parse(l));
      cb();
    },
  });
  return { logger: createLogger({ level: 'info', name, destination }), lines };
}
