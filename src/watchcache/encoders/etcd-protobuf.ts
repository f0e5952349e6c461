/**
 * etcd's watch responses as protobuf (etcdserverpb.WatchResponse, what etcd's gRPC Watch call
 * sends), encoded once.
 *
 * A WatchResponse is a sequence of fields in any order, so a frame is spliced from parts:
 * the header field (1), which carries the batch's revision and is encoded once per window
 * entry; the watcher's watch_id field (2), encoded once per id; and the events tail
 * (fragment 7, then one events field 11 per event), encoded once per selection (prevKv ×
 * filters × fragment) and shared by every watcher with that selection. Each event is encoded
 * once per entry and variant. The gRPC layer adds its 5-byte message prefix around a frame.
 *
 * Revisions a watcher has not received yet are merged into one response when they leave
 * together (`merge`): the header of the last of them, the watch_id, then each revision's
 * events tail in order. As etcd does for a lagging watcher, but never past `mergeMaxBytes` and
 * never splitting a revision (a fragmenting watcher's split revisions are not merged).
 */

import protobuf from 'protobufjs';
import type { Event, KeyValue, Revision } from '../../store/types.js';
import { etcdProto } from '../../wire/proto/index.js';
import type {
  Cancellation,
  EventView,
  FrameEncoder,
  FrameMerge,
  WatcherInfo,
  WindowEntry,
} from '../types.js';
import type { EncodedPart, EtcdFrame, EtcdHeaderFields } from './etcd-json.js';
import { perSelection } from './selection-cache.js';

export interface EtcdProtobufOptions {
  /** Header fields, read when a header is encoded. Default: all "0" (omitted). */
  header?: () => EtcdHeaderFields;
  /** A fragmenting watcher's responses stay under this size when they can. Default 2 MiB. */
  fragmentMaxBytes?: number;
  /** Merged responses stay at or under this size. Default: `fragmentMaxBytes`. */
  mergeMaxBytes?: number;
  /**
   * Called each time a part is encoded (an event, a batch's header, a selection's events
   * tail), so an observer can count the work. Default: none.
   */
  onEncode?: (part: EncodedPart) => void;
}

// Field tags of etcdserverpb.WatchResponse: (number << 3) | wire type.
const T_HEADER = (1 << 3) | 2;
const T_WATCH_ID = (2 << 3) | 0;
const T_CREATED = (3 << 3) | 0;
const T_CANCELED = (4 << 3) | 0;
const T_COMPACT_REVISION = (5 << 3) | 0;
const T_CANCEL_REASON = (6 << 3) | 2;
const T_FRAGMENT = (7 << 3) | 0;
const T_EVENTS = (11 << 3) | 2;
const FRAGMENT_FIELD = Buffer.from([T_FRAGMENT, 1]);

let instances = 0;

export class EtcdProtobufFormat implements FrameEncoder<EtcdFrame> {
  readonly name: string;
  private readonly header: () => EtcdHeaderFields;
  private readonly fragmentMaxBytes: number;
  private readonly onEncode: ((part: EncodedPart) => void) | undefined;
  readonly merge: FrameMerge<EtcdFrame>;
  private readonly idChunks = new Map<number, Buffer>();
  private readonly headKey: string;
  private readonly tailKeys: readonly string[];
  private readonly headerType = etcdProto().type('etcdserverpb.ResponseHeader');
  private readonly eventType = etcdProto().type('mvccpb.Event');

  constructor(options: EtcdProtobufOptions = {}) {
    this.name = `etcd-pb#${++instances}`;
    this.headKey = `${this.name}:h`;
    this.tailKeys = ['n', 'nf', 'p', 'pf'].map((v) => `${this.name}:t${v}`);
    this.header = options.header ?? (() => ({ clusterId: '0', memberId: '0', raftTerm: '0' }));
    this.fragmentMaxBytes = options.fragmentMaxBytes ?? 2 * 1024 * 1024;
    this.onEncode = options.onEncode;
    this.merge = { maxBytes: options.mergeMaxBytes ?? this.fragmentMaxBytes, frames: mergeFrames };
  }

  eventFrames(entry: WindowEntry, view: EventView, w: WatcherInfo): readonly EtcdFrame[] {
    const head = this.headFor(entry);
    const id = this.idChunk(w.watchId);
    const tails = this.tailsFor(entry, view, w);
    return tails.map((tail) => frame(id ? [head, id, tail] : [head, tail]));
  }

  progressFrame(revision: Revision, w: WatcherInfo): EtcdFrame {
    return this.control(revision, w.watchId, (_) => undefined);
  }

  canceledFrame(c: Cancellation, w: WatcherInfo, currentRevision: Revision): EtcdFrame {
    switch (c.reason) {
      case 'CLIENT':
        return this.control(currentRevision, w.watchId, (wr) => wr.uint32(T_CANCELED).bool(true));
      case 'COMPACTED':
        // etcd sends this one with a zero header revision.
        return this.control(0, w.watchId, (wr) =>
          wr.uint32(T_CANCELED).bool(true).uint32(T_COMPACT_REVISION).int64(c.compactRevision),
        );
      default:
        return this.control(c.resumeRevision - 1, w.watchId, (wr) =>
          wr.uint32(T_CANCELED).bool(true).uint32(T_CANCEL_REASON).string(c.message),
        );
    }
  }

  createdFrame(watchId: number, revision: Revision, cancelReason?: string): EtcdFrame {
    if (cancelReason === undefined)
      return this.control(revision, watchId, (wr) => wr.uint32(T_CREATED).bool(true));
    return this.control(revision, -1, (wr) =>
      wr
        .uint32(T_CREATED)
        .bool(true)
        .uint32(T_CANCELED)
        .bool(true)
        .uint32(T_CANCEL_REASON)
        .string(cancelReason),
    );
  }

  frameBytes(f: EtcdFrame): number {
    return f.bytes;
  }

  /** A response without events: header, watch_id, then what `fields` writes. */
  private control(
    revision: number,
    watchId: number,
    fields: (w: protobuf.Writer) => unknown,
  ): EtcdFrame {
    const wr = protobuf.Writer.create();
    wr.uint32(T_HEADER).bytes(this.headerBytes(revision));
    if (watchId !== 0) wr.uint32(T_WATCH_ID).int64(watchId);
    fields(wr);
    return frame([Buffer.from(wr.finish())]);
  }

  private headerBytes(revision: number): Uint8Array {
    const h = this.header();
    return this.headerType
      .encode({
        cluster_id: h.clusterId === '0' ? undefined : h.clusterId,
        member_id: h.memberId === '0' ? undefined : h.memberId,
        revision: nz(revision),
        raft_term: h.raftTerm === '0' ? undefined : h.raftTerm,
      })
      .finish();
  }

  private headFor(entry: WindowEntry): Buffer {
    let head = entry.encodings.get(this.headKey) as Buffer | undefined;
    if (head === undefined) {
      this.onEncode?.('head');
      const wr = protobuf.Writer.create();
      wr.uint32(T_HEADER).bytes(this.headerBytes(entry.batch.revision));
      head = Buffer.from(wr.finish());
      entry.encodings.set(this.headKey, head);
    }
    return head;
  }

  private idChunk(watchId: number): Buffer | null {
    if (watchId === 0) return null;
    let chunk = this.idChunks.get(watchId);
    if (chunk === undefined) {
      if (this.idChunks.size >= 65_536) this.idChunks.clear();
      chunk = Buffer.from(protobuf.Writer.create().uint32(T_WATCH_ID).int64(watchId).finish());
      this.idChunks.set(watchId, chunk);
    }
    return chunk;
  }

  private tailsFor(entry: WindowEntry, view: EventView, w: WatcherInfo): readonly Buffer[] {
    const variantKey = this.tailKeys[(w.prevKv ? 2 : 0) + (w.fragment ? 1 : 0)]!;
    return perSelection(entry, variantKey, view, () => {
      this.onEncode?.('tail');
      const all = entry.batch.events;
      const indices = view.indices ?? all.map((_, i) => i);
      const events = indices.map((i) => this.eventField(entry, i, all[i]!, w.prevKv));
      return w.fragment ? this.fragmentTails(events) : [Buffer.concat(events)];
    });
  }

  /** One `events` field (tag, length, mvccpb.Event), cached on the entry. */
  private eventField(entry: WindowEntry, i: number, ev: Event, prevKv: boolean): Buffer {
    const key = `${this.name}:e${prevKv ? 'p' : 'n'}${i}`;
    let b = entry.encodings.get(key) as Buffer | undefined;
    if (b === undefined) {
      this.onEncode?.('event');
      const body = this.eventType.encode(eventMessage(ev, prevKv)).finish();
      b = Buffer.from(protobuf.Writer.create().uint32(T_EVENTS).bytes(body).finish());
      entry.encodings.set(key, b);
    }
    return b;
  }

  /** etcd's fragmenting: fill each response up to the limit (at least one event each). */
  private fragmentTails(events: Buffer[]): Buffer[] {
    const total = events.reduce((n, e) => n + e.length, 0);
    if (events.length < 2 || total < this.fragmentMaxBytes) return [Buffer.concat(events)];
    const tails: Buffer[] = [];
    let start = 0;
    while (start < events.length) {
      let end = start + 1;
      let size = events[start]!.length;
      while (end < events.length && size + events[end]!.length < this.fragmentMaxBytes) {
        size += events[end]!.length;
        end++;
      }
      const part = events.slice(start, end);
      tails.push(Buffer.concat(end < events.length ? [FRAGMENT_FIELD, ...part] : part));
      start = end;
    }
    return tails;
  }
}

/**
 * Event frames of consecutive revisions (each [header, watch_id?, events tail]) as one: the
 * last one's header and the watch_id, then every tail in order. Repeated `events` fields
 * concatenate, so the response carries all their events.
 */
function mergeFrames(frames: readonly EtcdFrame[]): EtcdFrame {
  const last = frames[frames.length - 1]!.chunks;
  const chunks = last.slice(0, last.length - 1);
  for (const f of frames) chunks.push(f.chunks[f.chunks.length - 1]!);
  return frame(chunks);
}

function frame(chunks: Buffer[]): EtcdFrame {
  let bytes = 0;
  for (const c of chunks) bytes += c.length;
  return { chunks, bytes };
}

const nz = (n: number): number | undefined => (n === 0 ? undefined : n);

/**
 * A store key-value as the plain object protobufjs encodes as mvccpb.KeyValue. Zero fields are
 * left out (protobufjs writes every field present), as proto3 encoders do.
 */
export function kvMessage(kv: KeyValue): Record<string, unknown> {
  return {
    key: kv.key.length === 0 ? undefined : kv.key,
    create_revision: nz(kv.createRevision),
    mod_revision: nz(kv.modRevision),
    version: nz(kv.version),
    value: kv.value.length === 0 ? undefined : kv.value,
    lease: nz(kv.lease),
  };
}

/** A store event as mvccpb.Event (a DELETE's kv: the key and the deleting revision). */
export function eventMessage(ev: Event, withPrevKv: boolean): Record<string, unknown> {
  return {
    type: ev.type === 'PUT' ? undefined : 1,
    kv: kvMessage(ev.kv),
    prev_kv: withPrevKv && ev.prevKv ? kvMessage(ev.prevKv) : undefined,
  };
}
