/**
 * The in-process "format": frames are {@link WatchResponse} objects. Events are shared across
 * watchers exactly as the bytes of a wire format are: one array per (entry, selection, prevKv)
 * cached on the entry, so a thousand in-process watchers of one prefix share one array.
 */

import type { Event, KeyValue } from '../../store/types.js';
import type {
  Cancellation,
  EventView,
  FrameEncoder,
  Revision,
  WatcherInfo,
  WatchResponse,
  WindowEntry,
} from '../types.js';

/** Fixed per-event overhead counted against buffer bounds (object headers, numbers). */
const EVENT_OVERHEAD = 96;
const FRAME_OVERHEAD = 64;

/** Approximate in-memory bytes of a key-value. */
export function kvBytes(kv: KeyValue): number {
  return kv.key.byteLength + kv.value.byteLength + 48;
}

/** Approximate in-memory bytes of an event (used for window and buffer accounting). */
export function eventBytes(ev: Event, withPrevKv = true): number {
  return EVENT_OVERHEAD + kvBytes(ev.kv) + (withPrevKv && ev.prevKv ? kvBytes(ev.prevKv) : 0);
}

interface Sized {
  readonly response: WatchResponse;
  readonly bytes: number;
}

/** The events a view selects, without prevKv unless asked; cached per entry. */
export function selectedEvents(
  entry: WindowEntry,
  view: EventView,
  prevKv: boolean,
): readonly Event[] {
  const cacheKey = `obj:${prevKv ? 'p' : 'n'}:${view.key}`;
  const cached = entry.encodings.get(cacheKey) as readonly Event[] | undefined;
  if (cached !== undefined) return cached;
  const all = entry.batch.events;
  const picked = view.indices === null ? all : view.indices.map((i) => all[i]!);
  const events = prevKv ? picked : picked.map(stripPrevKv);
  entry.encodings.set(cacheKey, events);
  return events;
}

function stripPrevKv(ev: Event): Event {
  return ev.prevKv === undefined ? ev : { type: ev.type, kv: ev.kv };
}

export class ObjectEncoder implements FrameEncoder<Sized> {
  eventFrames(entry: WindowEntry, view: EventView, w: WatcherInfo): readonly Sized[] {
    // The frame itself is immutable and shared by every watcher with this selection.
    const cacheKey = `objf:${w.prevKv ? 'p' : 'n'}:${view.key}`;
    let frames = entry.encodings.get(cacheKey) as readonly Sized[] | undefined;
    if (frames === undefined) {
      const events = selectedEvents(entry, view, w.prevKv);
      let bytes = FRAME_OVERHEAD;
      for (const ev of events) bytes += eventBytes(ev, w.prevKv);
      frames = [{ response: { type: 'events', revision: entry.batch.revision, events }, bytes }];
      entry.encodings.set(cacheKey, frames);
    }
    return frames;
  }

  progressFrame(revision: Revision): Sized {
    return { response: { type: 'progress', revision }, bytes: FRAME_OVERHEAD };
  }

  canceledFrame(cancellation: Cancellation): Sized {
    return { response: { type: 'canceled', cancellation }, bytes: FRAME_OVERHEAD };
  }

  frameBytes(frame: Sized): number {
    return frame.bytes;
  }
}

export type ObjectFrame = Sized;

/** One encoder serves every in-process watcher. */
export const objectEncoder = new ObjectEncoder();
