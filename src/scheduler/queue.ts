/**
 * The scheduling queue, after kube-scheduler's: pods waiting for a node are in exactly one
 * of three places —
 *   active         ready to be tried, highest spec.priority first, then first come;
 *   backoff        tried and failed, waiting 1 s, 2 s, 4 s … (capped) before going active;
 *   unschedulable  no node fitted; they stay until something in the cluster changes (a node
 *                  added or changed, a bound pod deleted: `moveAllToActive`) or for at most
 *                  `maxUnschedulableMs`, then go through backoff again.
 * A popped pod is in flight until the scheduler says how it went. A cluster change seen
 * while it was in flight sends an unschedulable pod to backoff rather than the
 * unschedulable set, so the change that might help it is never missed.
 */
import sortedBtree from 'sorted-btree';
import { objectKey } from '../client/k8s/index.js';
import type { Pod } from './types.js';

const BTree = sortedBtree.default;

type Where = 'active' | 'backoff' | 'unschedulable' | 'inflight';

export interface QueuedPod {
  readonly key: string;
  pod: Pod;
  /** Failed attempts so far. */
  attempts: number;
  /** When the pod first entered the queue (ms). */
  readonly since: number;
  where: Where;
  seq: number;
  /** The move cycle when it was popped. */
  poppedAtCycle: number;
  timer?: NodeJS.Timeout;
  unschedulableSince?: number;
  /** Its key in the active tree while active. */
  order?: Order;
}

export interface QueueOptions {
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  maxUnschedulableMs?: number;
  now?: () => number;
}

interface Order {
  priority: number;
  seq: number;
}

export class SchedulingQueue {
  private readonly entries = new Map<string, QueuedPod>();
  private readonly active = new BTree<Order, string>(undefined, (a, b) =>
    a.priority !== b.priority ? b.priority - a.priority : a.seq - b.seq,
  );
  private readonly unschedulable = new Set<string>();
  private seq = 0;
  private moveCycle = 0;
  private waiters: (() => void)[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly maxUnschedulableMs: number;
  private readonly now: () => number;

  constructor(o: QueueOptions = {}) {
    this.initialBackoffMs = o.initialBackoffMs ?? 1000;
    this.maxBackoffMs = o.maxBackoffMs ?? 10_000;
    this.maxUnschedulableMs = o.maxUnschedulableMs ?? 5 * 60_000;
    this.now = o.now ?? Date.now;
    const every = Math.max(1000, Math.min(30_000, this.maxUnschedulableMs));
    this.flushTimer = setInterval(() => this.flushUnschedulable(), every);
    this.flushTimer.unref();
  }

  get size(): number {
    return this.entries.size;
  }

  /** Counts per place (for tests and metrics). */
  counts(): Record<Where, number> {
    const c: Record<Where, number> = { active: 0, backoff: 0, unschedulable: 0, inflight: 0 };
    for (const e of this.entries.values()) c[e.where]++;
    return c;
  }

  has(pod: Pod): boolean {
    return this.entries.has(objectKey(pod));
  }

  /** A new pending pod, or a newer version of one: see `update`. */
  add(pod: Pod): void {
    const key = objectKey(pod);
    const e = this.entries.get(key);
    if (e) {
      this.update(pod, true);
      return;
    }
    const entry: QueuedPod = {
      key,
      pod,
      attempts: 0,
      since: this.now(),
      where: 'active',
      seq: 0,
      poppedAtCycle: 0,
    };
    this.entries.set(key, entry);
    this.toActive(entry);
  }

  /**
   * A newer version of a queued pod. A change that may make it fit (`relevant`: its spec,
   * labels or annotations changed) sends an unschedulable pod back through backoff.
   */
  update(pod: Pod, relevant: boolean): void {
    const e = this.entries.get(objectKey(pod));
    if (!e) return;
    e.pod = pod;
    if (relevant && e.where === 'unschedulable') this.toBackoffOrActive(e);
  }

  delete(pod: Pod): void {
    const e = this.entries.get(objectKey(pod));
    if (!e) return;
    this.detach(e);
    this.entries.delete(e.key);
  }

  /** The next pod to try, or undefined when none is active. */
  pop(): QueuedPod | undefined {
    const min = this.active.minKey();
    if (min === undefined) return undefined;
    const key = this.active.get(min) as string;
    this.active.delete(min);
    const e = this.entries.get(key) as QueuedPod;
    e.where = 'inflight';
    e.poppedAtCycle = this.moveCycle;
    return e;
  }

  /** Resolves when a pod may be active (or the queue closed). */
  wait(): Promise<void> {
    if (this.active.size > 0 || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The in-flight pod was bound (or is gone): it leaves the queue. */
  done(e: QueuedPod): void {
    if (this.entries.get(e.key) !== e) return;
    this.detach(e);
    this.entries.delete(e.key);
  }

  /** No node fitted the in-flight pod. */
  markUnschedulable(e: QueuedPod): void {
    if (this.entries.get(e.key) !== e) return;
    e.attempts++;
    if (this.moveCycle > e.poppedAtCycle) {
      this.toBackoffOrActive(e);
      return;
    }
    e.where = 'unschedulable';
    e.unschedulableSince = this.now();
    this.unschedulable.add(e.key);
  }

  /** The in-flight pod failed for another reason (its binding failed): retry after backoff. */
  retry(e: QueuedPod, pod?: Pod): void {
    if (this.entries.get(e.key) !== e) return;
    if (pod) e.pod = pod;
    e.attempts++;
    this.toBackoffOrActive(e);
  }

  /** A pod back in the queue after `attempts` failures (its binding failed): via backoff. */
  requeue(pod: Pod, attempts: number): void {
    const key = objectKey(pod);
    if (this.entries.has(key)) {
      this.update(pod, false);
      return;
    }
    const entry: QueuedPod = {
      key,
      pod,
      attempts,
      since: this.now(),
      where: 'active',
      seq: 0,
      poppedAtCycle: 0,
    };
    this.entries.set(key, entry);
    this.toBackoffOrActive(entry);
  }

  /** Something changed that may let unschedulable pods fit. */
  moveAllToActive(): void {
    this.moveCycle++;
    for (const key of [...this.unschedulable]) {
      const e = this.entries.get(key);
      if (e) this.toBackoffOrActive(e);
    }
  }

  close(): void {
    this.closed = true;
    if (this.flushTimer) clearInterval(this.flushTimer);
    for (const e of this.entries.values()) clearTimeout(e.timer);
    for (const w of this.waiters.splice(0)) w();
  }

  backoffMs(attempts: number): number {
    if (attempts <= 0) return 0;
    const ms = this.initialBackoffMs * 2 ** Math.min(attempts - 1, 30);
    return Math.min(ms, this.maxBackoffMs);
  }

  private flushUnschedulable(): void {
    const now = this.now();
    for (const key of [...this.unschedulable]) {
      const e = this.entries.get(key);
      if (e && now - (e.unschedulableSince ?? now) >= this.maxUnschedulableMs) {
        this.toBackoffOrActive(e);
      }
    }
  }

  private detach(e: QueuedPod): void {
    if (e.where === 'active' && e.order) this.active.delete(e.order);
    if (e.where === 'backoff') clearTimeout(e.timer);
    if (e.where === 'unschedulable') this.unschedulable.delete(e.key);
    e.timer = undefined;
  }

  private toActive(e: QueuedPod): void {
    this.detach(e);
    e.where = 'active';
    e.seq = ++this.seq;
    e.order = { priority: priorityOf(e.pod), seq: e.seq };
    this.active.set(e.order, e.key);
    for (const w of this.waiters.splice(0)) w();
  }

  private toBackoffOrActive(e: QueuedPod): void {
    this.detach(e);
    const wait = this.backoffMs(e.attempts);
    if (wait <= 0 || this.closed) {
      this.toActive(e);
      return;
    }
    e.where = 'backoff';
    e.timer = setTimeout(() => {
      if (this.entries.get(e.key) === e && e.where === 'backoff') this.toActive(e);
    }, wait);
    e.timer.unref();
  }
}

function priorityOf(p: Pod): number {
  const v = p.spec?.priority;
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}
