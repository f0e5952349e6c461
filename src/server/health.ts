/**
 * A member's health, for the probes on the client port (src/api/health.ts serves them):
 *
 * - etcd's /health: false when an alarm is raised (`ALARM NOSPACE`, `ALARM CORRUPT`; etcd 3.5's
 *   reasons, 3.4 answers no reason), when there is no leader (`RAFT NO LEADER`; skipped with
 *   ?serializable), or when a read fails within a second (`RANGE ERROR:...`; a linearizable
 *   read barrier, or with ?serializable a local read). ?exclude=NOSPACE ignores that alarm.
 * - kube-apiserver's /livez and /readyz checks, each a name and a function that answers
 *   undefined (passed) or why it failed:
 *     ping         always passes
 *     store        the store is open and has not failed
 *     shutdown     the member is not stopping (readyz)
 *     leader       a Raft leader is known (readyz)
 *     applied      the applied index is within APPLY_LAG_LIMIT of the commit index (readyz)
 *     watch-cache  the watch cache reaches the store's revision within a second (readyz)
 *   /livez runs ping and store; /readyz and /healthz all of them.
 */
import { EtceteraError } from '../errors.js';
import type { Alarm } from '../store/types.js';
import { sleep } from './util.js';

/** etcd refuses proposals beyond this gap between commit and apply; readiness uses it too. */
export const APPLY_LAG_LIMIT = 5000;
const PROBE_TIMEOUT_MS = 1000;

export interface NamedCheck {
  readonly name: string;
  /** Undefined when the check passes, else why it failed. */
  check(): Promise<string | undefined>;
}

export interface HealthDeps {
  failure(): string | undefined;
  stopping(): boolean;
  removed(): boolean;
  hasLeader(): boolean;
  alarms(): Alarm[];
  commitIndex(): number;
  appliedIndex(): number;
  storeRevision(): number;
  cacheRevision(): number;
  /** A linearizable read barrier (ReadIndex), rejecting on timeout or without a leader. */
  readBarrier(): Promise<void>;
  /** A local read of the store. */
  localRead(): Promise<unknown>;
}

export interface EtcdHealthOptions {
  serializable: boolean;
  /** Alarm types to ignore (etcd's ?exclude=NOSPACE). */
  exclude: readonly string[];
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new EtceteraError('ERR_TIMEOUT')), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export class MemberHealth {
  readonly livez: readonly NamedCheck[];
  readonly readyz: readonly NamedCheck[];

  constructor(private readonly d: HealthDeps) {
    const ping: NamedCheck = { name: 'ping', check: async () => undefined };
    const store: NamedCheck = {
      name: 'store',
      check: async () => {
        const f = d.failure();
        return f === undefined ? undefined : `the member failed: ${f}`;
      },
    };
    const shutdown: NamedCheck = {
      name: 'shutdown',
      check: async () =>
        d.stopping()
          ? 'the member is stopping'
          : d.removed()
            ? 'the member was removed'
            : undefined,
    };
    const leader: NamedCheck = {
      name: 'leader',
      check: async () => (d.hasLeader() ? undefined : 'no Raft leader is known'),
    };
    const applied: NamedCheck = {
      name: 'applied',
      check: async () => {
        const lag = d.commitIndex() - d.appliedIndex();
        return lag <= APPLY_LAG_LIMIT
          ? undefined
          : `applied index ${d.appliedIndex()} is ${lag} entries behind commit ${d.commitIndex()}`;
      },
    };
    const watchCache: NamedCheck = {
      name: 'watch-cache',
      check: async () => {
        const target = d.storeRevision();
        const deadline = Date.now() + PROBE_TIMEOUT_MS;
        while (d.cacheRevision() < target && Date.now() < deadline) await sleep(10);
        const at = d.cacheRevision();
        return at >= target ? undefined : `watch cache at revision ${at}, store at ${target}`;
      },
    };
    this.livez = [ping, store];
    this.readyz = [ping, store, shutdown, leader, applied, watchCache];
  }

  /** etcd's /health answer. */
  async etcd(o: EtcdHealthOptions): Promise<{ health: boolean; reason: string }> {
    const failure = this.d.failure();
    if (failure !== undefined) return { health: false, reason: 'FAILED' };
    if (this.d.removed()) return { health: false, reason: 'REMOVED' };
    const alarm = this.d.alarms().find((a) => !o.exclude.includes(a.alarm));
    if (alarm !== undefined) return { health: false, reason: `ALARM ${alarm.alarm}` };
    if (!o.serializable && !this.d.hasLeader()) return { health: false, reason: 'RAFT NO LEADER' };
    try {
      await withTimeout(
        o.serializable ? this.d.localRead() : this.d.readBarrier(),
        PROBE_TIMEOUT_MS,
      );
    } catch (e) {
      return { health: false, reason: `RANGE ERROR:${e instanceof Error ? e.message : String(e)}` };
    }
    return { health: true, reason: '' };
  }
}
