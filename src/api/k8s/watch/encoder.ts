/**
 * The Kubernetes `?watch=1` stream as a wire format of the watch cache (a FrameEncoder), and
 * the indexed fields (spec.nodeName, metadata.name) as fields of the watch cache's field index.
 *
 * Each Kubernetes watcher has its own encoder: it holds the watcher's filter (labels and
 * every field term), its format (JSON or one-row Tables) and whether a Table's columns went
 * out yet. What it encodes is shared: the decoded events and their lines live on the window
 * entry (events.ts, encode.ts), so an event is parsed once and serialised once per variant
 * (type, version, Table) however many watchers get it. The per-watcher work is the filter:
 * an object that starts matching is ADDED, stops matching DELETED (carrying its last matching
 * state), else MODIFIED.
 *
 * A frame is the text of one revision's lines; progress notifications become BOOKMARKs. A
 * watcher's end (its client, a timeout, the cache's slow-watcher policy, a compacted start) is
 * reported to `onEnd` after the current dispatch step, which ends the stream.
 */

import type { ObjectFilter } from '../../../k8s/filter.js';
import { resourcePrefix } from '../../../k8s/keys.js';
import type { KubeObject, ResourceInfo } from '../../../k8s/types.js';
import type {
  Cancellation,
  EventView,
  FrameEncoder,
  IndexedField,
  WindowEntry,
} from '../../../watchcache/index.js';
import {
  bookmarkLine,
  jsonLine,
  tableLine,
  type WatchEventType,
  type WatchFormat,
} from './encode.js';
import { type KubeEvent, kubeEventAt, refOf } from './events.js';

const NO_FRAMES: readonly string[] = [];

export class KubeWatchEncoder implements FrameEncoder<string> {
  /** Events of its resource examined for this watcher (how well the index spares it). */
  offered = 0;
  private readonly ref: string;
  private ended = false;

  constructor(
    readonly info: ResourceInfo,
    readonly filter: ObjectFilter,
    readonly format: WatchFormat,
    private tableColumnsSent: boolean,
    private readonly now: () => number,
    private readonly onEnd: (c: Cancellation) => void,
  ) {
    this.ref = refOf(info);
  }

  eventFrames(entry: WindowEntry, view: EventView): readonly string[] {
    const n = view.indices === null ? entry.batch.events.length : view.indices.length;
    let text = '';
    for (let j = 0; j < n; j++) {
      const e = kubeEventAt(entry, view.indices === null ? j : view.indices[j]!);
      if (e === null || e.ref !== this.ref) continue;
      this.offered++;
      const type = this.typeFor(e);
      if (type !== undefined) text += this.line(e, type);
    }
    return text === '' ? NO_FRAMES : [text];
  }

  progressFrame(revision: number): string {
    return bookmarkLine(this.info, revision);
  }

  canceledFrame(c: Cancellation): string {
    if (!this.ended) {
      this.ended = true;
      // Called inside the cache's dispatch or cancel: end the stream after it.
      queueMicrotask(() => this.onEnd(c));
    }
    return '';
  }

  get columnsSent(): boolean {
    return this.tableColumnsSent;
  }

  markColumnsSent(): void {
    this.tableColumnsSent = true;
  }

  frameBytes(frame: string): number {
    return frame.length;
  }

  /** The event type this watcher sees for `e` (selector transitions included), if any. */
  private typeFor(e: KubeEvent): WatchEventType | undefined {
    const newMatch = e.obj !== undefined && this.filter.matches(e.obj.obj);
    const oldMatch = e.old !== undefined && this.filter.matches(e.old.obj);
    if (newMatch) return oldMatch ? 'MODIFIED' : 'ADDED';
    return oldMatch ? 'DELETED' : undefined;
  }

  private line(e: KubeEvent, type: WatchEventType): string {
    if (this.format.kind === 'json') return jsonLine(e, type, this.info);
    const withColumns = !this.tableColumnsSent;
    this.tableColumnsSent = true;
    return tableLine(e, type, this.info, this.format.includeObject, withColumns, this.now());
  }
}

const indexedFields = new Map<string, IndexedField>();

/**
 * The watch cache's field for `field` of `info`'s objects: metadata.name, or one of the
 * resource's indexed fields (spec.nodeName for pods). One object per resource and field, so
 * that every watcher of it shares one bucket map.
 */
export function indexedField(info: ResourceInfo, field: string): IndexedField | undefined {
  const get: ((o: KubeObject) => string) | undefined =
    field === 'metadata.name'
      ? (o) => o.metadata.name ?? ''
      : info.indexedFields.includes(field)
        ? info.fields[field]
        : undefined;
  if (get === undefined) return undefined;
  const id = `${refOf(info)}|${field}`;
  let f = indexedFields.get(id);
  if (f === undefined) {
    const ref = refOf(info);
    f = {
      prefix: resourcePrefix(info),
      valueOf(entry, index, before) {
        const e = kubeEventAt(entry, index);
        if (e === null || e.ref !== ref) return undefined;
        const o = before ? e.old : e.obj;
        return o === undefined ? undefined : get(o.obj);
      },
    };
    indexedFields.set(id, f);
  }
  return f;
}
