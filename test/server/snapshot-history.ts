/**
 * A history to snapshot and restore, and what a server serves of it: writeHistory makes
 * puts, overwrites, deletions, a txn of several keys in one revision, a value larger than a
 * bbolt page, leases with keys attached, a compaction, and more writes after it; historyOf
 * reads every key at every revision from the compaction to the current one, and the leases
 * with their granted TTLs, from etcd or etcetera alike (one client API for both).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { Client } from '../../src/client/index.js';

export function etcdctlUnavailable(): string | undefined {
  const r = spawnSync('etcdctl', ['version'], {
    encoding: 'utf8',
    env: { ...process.env, ETCDCTL_API: '3' },
  });
  if (r.error) return `etcdctl is not installed (${(r.error as NodeJS.ErrnoException).code})`;
  return undefined;
}

export interface Written {
  /** The compaction revision. */
  compacted: number;
  leases: string[];
}

export async function writeHistory(c: Client, keys = 30): Promise<Written> {
  for (let i = 0; i < keys; i++) await c.put(`k/${i}`, `v${i}`);
  for (let i = 0; i < keys; i += 3) await c.put(`k/${i}`, `w${i}`);
  for (let i = 1; i < keys; i += 5) await c.delete(`k/${i}`);
  await c.put('big', Buffer.alloc(20_000, 'b'));
  await c.txn({
    success: [
      { put: { key: 'txn/a', value: '1' } },
      { put: { key: 'txn/b', value: '2' } },
      { delete: { key: 'k/2' } },
    ],
  });
  const l1 = await c.leaseGrant(600);
  const l2 = await c.leaseGrant(900);
  await c.put('leased/1', 'x', { lease: l1.id });
  await c.put('leased/2', 'y', { lease: l2.id });
  await c.put('gone', 'soon');
  await c.delete('gone');
  const mid = (await c.put('k/0', 'before-compaction')).header.revision;
  await c.compact(mid);
  for (let i = 0; i < keys; i += 4) await c.put(`k/${i}`, `after${i}`);
  await c.delete('k/3');
  await c.put('k/new', Buffer.from([0, 1, 2, 255]));
  return { compacted: mid, leases: [l1.id, l2.id] };
}

export interface History {
  revision: number;
  /** At each revision from the compaction on: every key with its fields (value hashed). */
  views: string[][];
  leases: Array<{ id: string; grantedTtl: number; keys: string[] }>;
}

/** `lease` maps a lease ID as the server's client saw it to the one to record (default: as is). */
export async function historyOf(
  c: Client,
  from: number,
  lease: (id: string) => string = (id) => id,
): Promise<History> {
  const revision = (await c.get('any')).header.revision;
  const views: string[][] = [];
  for (let rev = from; rev <= revision; rev++) {
    const r = await c.get(Buffer.from([0]), { fromKey: true, revision: rev });
    views.push(
      r.kvs.map(
        (kv) =>
          `${Buffer.from(kv.key).toString('hex')} c${kv.createRevision} m${kv.modRevision} ` +
          `v${kv.version} l${lease(kv.lease)} ${createHash('sha1').update(kv.value).digest('hex')}`,
      ),
    );
  }
  const ids = (await c.leases()).leases.sort((a, b) => lease(a).localeCompare(lease(b)));
  const leases = [];
  for (const id of ids) {
    const l = await c.leaseTimeToLive(id, { keys: true });
    leases.push({
      id: lease(id),
      grantedTtl: l.grantedTtl,
      keys: l.keys.map((k) => Buffer.from(k).toString()).sort(),
    });
  }
  return { revision, views, leases };
}
