/** Shared helpers of the server tests: configs on ephemeral loopback ports, waiting, bytes. */
import {
  type MemberConfig,
  type MemberConfigInput,
  resolveConfig,
} from '../../src/server/config.js';
import { silentLogger } from '../../src/server/logger.js';
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
