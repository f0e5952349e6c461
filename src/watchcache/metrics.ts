/**
 * The watch cache's metrics (prom-client). Pass a Registry to expose them; without one they
 * are kept but registered nowhere, so several caches (tests, embedded users) never collide.
 */

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface WatchMetrics {
  /** Watchers open now (all states). */
  readonly watchers: Gauge;
  /** Events handed to consumers (connections, in-process readers). */
  readonly eventsSent: Counter;
  /** Frame bytes handed to consumers. */
  readonly bytesSent: Counter;
  /** Watchers cancelled because they did not keep up. */
  readonly slowCancelled: Counter;
  /** Seconds from a batch entering the cache to its fan-out being queued for every watcher. */
  readonly dispatchLatency: Histogram;
  /**
   * Parts a wire format encoded for this cache's entries (labels `format`, `part`: event,
   * head, tail): each once per entry however many watchers share it.
   */
  readonly encodedParts: Counter<'format' | 'part'>;
}

export function createMetrics(registry: Registry | undefined, prefix: string): WatchMetrics {
  const registers = registry ? [registry] : [];
  return {
    watchers: new Gauge({ name: `${prefix}watchers`, help: 'Watchers open', registers }),
    eventsSent: new Counter({
      name: `${prefix}events_sent_total`,
      help: 'Events handed to watch consumers',
      registers,
    }),
    bytesSent: new Counter({
      name: `${prefix}bytes_sent_total`,
      help: 'Frame bytes handed to watch consumers',
      registers,
    }),
    slowCancelled: new Counter({
      name: `${prefix}slow_watchers_cancelled_total`,
      help: 'Watchers cancelled for not keeping up',
      registers,
    }),
    dispatchLatency: new Histogram({
      name: `${prefix}dispatch_latency_seconds`,
      help: 'Time from a batch entering the cache to its fan-out being queued',
      buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers,
    }),
    encodedParts: new Counter({
      name: `${prefix}encoded_parts_total`,
      help: 'Parts of watch responses encoded, by wire format and part',
      labelNames: ['format', 'part'],
      registers,
    }),
  };
}
