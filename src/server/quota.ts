/**
 * The space quota (--quota-backend-bytes), as etcd applies it: before a request that adds
 * data (a put, a txn with a put in either branch, a lease grant) is proposed, the member
 * compares its database size plus the request's size with the quota; at or over it, the
 * member raises a NOSPACE alarm for itself through Raft and refuses the request with
 * `etcdserver: mvcc: database space exceeded`. Requests that add nothing always pass. Once
 * the alarm is raised, apply refuses such requests on every member (src/store/alarms.ts)
 * until `alarm disarm`; a disarmed member still over its quota raises it again on the next
 * such request.
 *
 * "Size" is the bytes of the files in the member's LevelDB directory (tables, logs,
 * manifest): what LevelDB occupies on disk, approximately the data once compacted plus
 * what compaction has not reclaimed yet. It is sampled every `sampleMs` (stat calls off the
 * request path) and after a defragment, so a request is checked against a figure at most
 * that old.
 */
import { EtceteraError } from '../errors.js';
import { addsData } from '../store/alarms.js';
import type { Command } from '../store/types.js';
import { commandSize } from '../store/validate.js';
import type { Logger } from './logger.js';
import { dataSize } from './util.js';

/** etcd's default quota: 2 GiB. `--quota-backend-bytes 0` means this too. */
export const DEFAULT_QUOTA_BACKEND_BYTES = 2 * 1024 * 1024 * 1024;

export function quotaBytesOf(flag: number): number {
  return flag > 0 ? flag : DEFAULT_QUOTA_BACKEND_BYTES;
}

export interface QuotaDeps {
  quotaBytes: number;
  /** The LevelDB directory whose size counts. */
  dbDir: string;
  /** Whether this member's NOSPACE alarm is raised already. */
  raised(): boolean;
  /** Proposes this member's NOSPACE alarm. */
  raise(): Promise<unknown>;
  logger: Logger;
  sampleMs?: number;
}

export class SpaceQuota {
  private size = 0;
  private timer: NodeJS.Timeout | undefined;
  private sampling: Promise<number> | undefined;

  constructor(private readonly d: QuotaDeps) {}

  get quotaBytes(): number {
    return this.d.quotaBytes;
  }

  /** The last sampled database size in bytes. */
  get dbSize(): number {
    return this.size;
  }

  async start(): Promise<void> {
    await this.sample();
    this.timer = setInterval(() => void this.sample(), this.d.sampleMs ?? 250);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Measures the database now (one at a time). */
  sample(): Promise<number> {
    this.sampling ??= dataSize(this.d.dbDir)
      .then((n) => {
        this.size = n;
        return n;
      })
      .finally(() => {
        this.sampling = undefined;
      });
    return this.sampling;
  }

  /** etcd's check before proposing; throws ERR_NO_SPACE (after raising the alarm) when over. */
  async check(c: Command): Promise<void> {
    if (!addsData(c)) return;
    if (this.size + commandSize(c) < this.d.quotaBytes) return;
    if (!this.d.raised()) {
      this.d.logger.warn(
        { dbSize: this.size, quota: this.d.quotaBytes },
        'database space exceeded: raising NOSPACE',
      );
      await this.d.raise().catch((e: unknown) => {
        this.d.logger.warn({ err: String(e) }, 'could not raise the NOSPACE alarm');
      });
    }
    throw new EtceteraError('ERR_NO_SPACE');
  }
}
