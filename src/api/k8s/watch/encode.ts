/**
 * The Kubernetes watch wire format: one compact JSON event per line,
 * `{"type":T,"object":O}`. An event's line is built once per variant (type, version,
 * Table or not) and the same string is written to every watcher that gets it.
 */

import type { Status } from '../../../k8s/status.js';
import { type IncludeObject, tableJson, tableRow } from '../../../k8s/table.js';
import type { ResourceInfo } from '../../../k8s/types.js';
import { apiVersionOf } from '../../../k8s/types.js';
import type { CachedObject } from './cache.js';
import { type KubeEvent, kubeWatchStats } from './events.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** How a watcher wants its objects: plain JSON, or one-row Tables (kubectl get -w). */
export type WatchFormat =
  | { readonly kind: 'json' }
  | { readonly kind: 'table'; readonly includeObject: IncludeObject };

/** The object an event of `type` carries for a watcher: DELETED carries `old` at the event's revision. */
export function eventObject(e: KubeEvent, type: WatchEventType): CachedObject {
  if (type !== 'DELETED') return e.obj as CachedObject;
  if (!e.deletedView) e.deletedView = (e.old as CachedObject).withRv(e.revision);
  return e.deletedView;
}

/** The JSON line of one event (shared across watchers of the same variant). */
export function jsonLine(e: KubeEvent, type: WatchEventType, info: ResourceInfo): string {
  const variant = `${type}|${apiVersionOf(info)}`;
  let line = e.lines.get(variant);
  if (line === undefined) {
    kubeWatchStats.lines++;
    line = `{"type":"${type}","object":${eventObject(e, type).json(info)}}\n`;
    e.lines.set(variant, line);
  }
  return line;
}

/**
 * The Table line of one event. The row is shared; the wrapper carries the column
 * definitions only in a watcher's first event, as kube-apiserver does.
 */
export function tableLine(
  e: KubeEvent,
  type: WatchEventType,
  info: ResourceInfo,
  include: IncludeObject,
  withColumns: boolean,
  nowMs: number,
): string {
  const variant = `row|${type}|${include}|${apiVersionOf(info)}`;
  let row = e.lines.get(variant);
  const entry = eventObject(e, type);
  if (row === undefined) {
    row = tableRow(info, entry, include, nowMs);
    e.lines.set(variant, row);
  }
  const table = tableJson(info, [row], { resourceVersion: String(entry.rv) }, withColumns);
  return `{"type":"${type}","object":${table}}\n`;
}

/** A line for an object outside the event stream (the synthetic ADDED of initial events). */
export function objectLine(
  type: WatchEventType,
  entry: CachedObject,
  info: ResourceInfo,
  format: WatchFormat,
  withColumns: boolean,
  nowMs: number,
): string {
  if (format.kind === 'json') return `{"type":"${type}","object":${entry.json(info)}}\n`;
  const row = tableRow(info, entry, format.includeObject, nowMs);
  const table = tableJson(info, [row], { resourceVersion: String(entry.rv) }, withColumns);
  return `{"type":"${type}","object":${table}}\n`;
}

/** A BOOKMARK: kind, apiVersion and resourceVersion only (plus the initial-events-end mark). */
export function bookmarkLine(
  info: ResourceInfo,
  revision: number,
  initialEventsEnd = false,
): string {
  const metadata = initialEventsEnd
    ? { resourceVersion: String(revision), annotations: { 'k8s.io/initial-events-end': 'true' } }
    : { resourceVersion: String(revision) };
  return `${JSON.stringify({
    type: 'BOOKMARK',
    object: { kind: info.kind, apiVersion: apiVersionOf(info), metadata },
  })}\n`;
}

export function errorLine(status: Status): string {
  return `${JSON.stringify({ type: 'ERROR', object: status })}\n`;
}
