/**
 * etcd 3.4's JSON watch responses (what its grpc-gateway emits on /v3/watch), encoded once.
 *
 * A response is `{"result":{"header":{...},"watch_id":"<id>",...,"events":[...]}}`. Fields come
 * in protobuf field order and zero values are left out (proto3 JSON): PUT events have no
 * "type", a DELETE's kv has only key and mod_revision, watch_id 0 is absent, int64s are
 * decimal strings and bytes are base64.
 *
 * Serialise once: the header (which carries the batch's revision) and each event are encoded
 * once per entry and cached on it; so is the whole events tail for each selection. A frame is
 * then three chunks: shared head, the watcher's `"watch_id"` (cached per id), shared tail. A
 * sink joins them into what its wire needs: one HTTP chunk, or one websocket message.
 */

import type { Event, KeyValue, Revision } from '../../store/types.js';
import { encodeHeader, encodeKeyValue } from '../../wire/etcd-json.js';
import type { Cancellation, EventView, FrameEncoder, WatcherInfo, WindowEntry } from '../types.js';
import { perSelection } from './selection-cache.js';

/** The member's identity in every response header. Decimal uint64 strings; "0" is omitted. */
export interface EtcdHeaderFields {
  clusterId: string;
  memberId: string;
  raftTerm: string;
}

export interface EtcdFrame {
  readonly chunks: readonly Buffer[];
  readonly bytes: number;
}

export interface EtcdJsonOptions {
  /** Header fields, read when a header is encoded. Default: all "0" (omitted). */
  header?: () => EtcdHeaderFields;
  /** A fragmenting watcher's responses stay under this size when they can. Default 1.5 MiB. */
  fragmentMaxBytes?: number;
  /**
   * Called each time a part is encoded (an event, a batch's header, a selection's events
   * tail), so an observer can count the work: each is encoded once however many watchers
   * share it. Default: none.
   */
  onEncode?: (part: EncodedPart) => void;
}

export type EncodedPart = 'event' | 'head' | 'tail';

const CLOSE = Buffer.from('}}');
let instances = 0;

export class EtcdJsonFormat implements FrameEncoder<EtcdFrame> {
  /** Prefix of this format's cache keys on window entries (unique per instance). */
  readonly name: string;
  private readonly header: () => EtcdHeaderFields;
  private readonly fragmentMaxBytes: number;
  private readonly onEncode: ((part: EncodedPart) => void) | undefined;
  private readonly idChunks = new Map<number, Buffer>();
  /**
   * Cache keys on window entries, built once: the head's, and per tail variant (prevKv ×
   * fragment) the key of a map from selection key to tails. Looked up once per (watcher, batch),
   * so no key string is built on that path.
   */
  private readonly headKey: string;
  private readonly tailKeys: readonly string[];

  constructor(options: EtcdJsonOptions = {}) {
    this.name = `etcd-json#${++instances}`;
    this.headKey = `${this.name}:h`;
    this.tailKeys = ['n', 'nf', 'p', 'pf'].map((v) => `${this.name}:t${v}`);
    this.header = options.header ?? (() => ({ clusterId: '0', memberId: '0', raftTerm: '0' }));
    this.fragmentMaxBytes = options.fragmentMaxBytes ?? 1.5 * 1024 * 1024;
    this.onEncode = options.onEncode;
  }

  eventFrames(entry: WindowEntry, view: EventView, w: WatcherInfo): readonly EtcdFrame[] {
    const head = this.headFor(entry);
    const id = this.idChunk(w.watchId);
    const tails = this.tailsFor(entry, view, w);
    if (tails.length === 1) return [frame(id ? [head, id, tails[0]!] : [head, tails[0]!])];
    return tails.map((tail) => frame(id ? [head, id, tail] : [head, tail]));
  }

  progressFrame(revision: Revision, w: WatcherInfo): EtcdFrame {
    return this.controlFrame(revision, w.watchId, '');
  }

  canceledFrame(c: Cancellation, w: WatcherInfo, currentRevision: Revision): EtcdFrame {
    switch (c.reason) {
      case 'CLIENT':
        return this.controlFrame(currentRevision, w.watchId, ',"canceled":true');
      case 'COMPACTED':
        // etcd sends this one with a zero header revision (so none at all).
        return this.controlFrame(
          0,
          w.watchId,
          `,"canceled":true,"compact_revision":"${c.compactRevision}"`,
        );
      default:
        return this.controlFrame(
          c.resumeRevision - 1,
          w.watchId,
          `,"canceled":true,"cancel_reason":${JSON.stringify(c.message)}`,
        );
    }
  }

  /** etcd's answer to a create request; with `cancelReason`, a refused create (watch_id -1). */
  createdFrame(watchId: number, revision: Revision, cancelReason?: string): EtcdFrame {
    const tail =
      cancelReason === undefined
        ? ',"created":true'
        : `,"created":true,"canceled":true,"cancel_reason":${JSON.stringify(cancelReason)}`;
    return this.controlFrame(revision, cancelReason === undefined ? watchId : -1, tail);
  }

  frameBytes(f: EtcdFrame): number {
    return f.bytes;
  }

  /** A response without events: header, watch_id, then `fields` (already JSON). */
  controlFrame(revision: number, watchId: number, fields: string): EtcdFrame {
    const idPart = watchId === 0 ? '' : `,"watch_id":"${watchId}"`;
    return frame([
      Buffer.from(`{"result":{"header":${this.headerJson(revision)}${idPart}${fields}}}`),
    ]);
  }

  private headerJson(revision: number): string {
    const h = this.header();
    return JSON.stringify(
      encodeHeader({
        clusterId: h.clusterId,
        memberId: h.memberId,
        revision,
        raftTerm: Number(h.raftTerm),
      }),
    );
  }

  private headFor(entry: WindowEntry): Buffer {
    const key = this.headKey;
    let head = entry.encodings.get(key) as Buffer | undefined;
    if (head === undefined) {
      this.onEncode?.('head');
      head = Buffer.from(`{"result":{"header":${this.headerJson(entry.batch.revision)}`);
      entry.encodings.set(key, head);
    }
    return head;
  }

  private idChunk(watchId: number): Buffer | null {
    if (watchId === 0) return null;
    let chunk = this.idChunks.get(watchId);
    if (chunk === undefined) {
      if (this.idChunks.size >= 65_536) this.idChunks.clear();
      chunk = Buffer.from(`,"watch_id":"${watchId}"`);
      this.idChunks.set(watchId, chunk);
    }
    return chunk;
  }

  /** The `,"events":[...]}}` tail(s) for a selection: one, or several when fragmenting. */
  private tailsFor(entry: WindowEntry, view: EventView, w: WatcherInfo): readonly Buffer[] {
    const variantKey = this.tailKeys[(w.prevKv ? 2 : 0) + (w.fragment ? 1 : 0)]!;
    return perSelection(entry, variantKey, view, () => {
      this.onEncode?.('tail');
      const all = entry.batch.events;
      const indices = view.indices ?? all.map((_, i) => i);
      const events = indices.map((i) => this.eventJson(entry, i, all[i]!, w.prevKv));
      return w.fragment ? this.fragmentTails(events) : [tailOf(events, false)];
    });
  }

  private eventJson(entry: WindowEntry, i: number, ev: Event, prevKv: boolean): Buffer {
    const key = `${this.name}:e${prevKv ? 'p' : 'n'}${i}`;
    let b = entry.encodings.get(key) as Buffer | undefined;
    if (b === undefined) {
      this.onEncode?.('event');
      b = Buffer.from(eventToJson(ev, prevKv));
      entry.encodings.set(key, b);
    }
    return b;
  }

  /** etcd's fragmenting: fill each response up to the limit (at least one event each). */
  private fragmentTails(events: Buffer[]): Buffer[] {
    const total = events.reduce((n, e) => n + e.length + 1, 0);
    if (events.length < 2 || total < this.fragmentMaxBytes) return [tailOf(events, false)];
    const tails: Buffer[] = [];
    let start = 0;
    while (start < events.length) {
      let end = start + 1;
      let size = events[start]!.length;
      while (end < events.length && size + events[end]!.length + 1 < this.fragmentMaxBytes) {
        size += events[end]!.length + 1;
        end++;
      }
      tails.push(tailOf(events.slice(start, end), end < events.length));
      start = end;
    }
    return tails;
  }
}

function tailOf(events: Buffer[], fragment: boolean): Buffer {
  const parts: Buffer[] = [Buffer.from(fragment ? ',"fragment":true,"events":[' : ',"events":[')];
  events.forEach((e, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(e);
  });
  parts.push(Buffer.from(']'), CLOSE);
  return Buffer.concat(parts);
}

const COMMA = Buffer.from(',');

function frame(chunks: Buffer[]): EtcdFrame {
  let bytes = 0;
  for (const c of chunks) bytes += c.length;
  return { chunks, bytes };
}

/** One event as etcd's JSON (mvccpb.Event). */
export function eventToJson(ev: Event, withPrevKv: boolean): string {
  const type = ev.type === 'PUT' ? '' : '"type":"DELETE",';
  const prev = withPrevKv && ev.prevKv ? `,"prev_kv":${kvToJson(ev.prevKv)}` : '';
  return `{${type}"kv":${kvToJson(ev.kv)}${prev}}`;
}

/** One key-value as etcd's JSON (mvccpb.KeyValue), zero fields left out. */
export function kvToJson(kv: KeyValue): string {
  return JSON.stringify(encodeKeyValue(kv));
}
