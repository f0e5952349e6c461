/**
 * src/watchcache: the event window, the watcher index and the serialise-once fan-out.
 *
 *   const cacher = new Cacher(store, { registry });
 *   for await (const r of cacher.watchIterator({ key: '/registry/pods/', prefix: true })) ...
 *
 * Wire layers (src/api) build on `Cacher.addWatcher` with a {@link FrameEncoder} and move the
 * frames with a {@link Connection} (or an {@link EtcdWatchSession} for etcd's watch stream).
 */

export { prefixEnd } from '../wire/bytes.js';
export type { AddWatcherOptions } from './cacher.js';
export { Cacher } from './cacher.js';
export type { ConnectionOptions } from './connection.js';
export { Connection } from './connection.js';
export { DirectWatch } from './direct.js';
export type {
  EtcdFrame,
  EtcdHeaderFields,
  EtcdJsonOptions,
} from './encoders/etcd-json.js';
export { EtcdJsonFormat, eventToJson, kvToJson } from './encoders/etcd-json.js';
export type { ObjectFrame } from './encoders/object.js';
export { ObjectEncoder, objectEncoder, selectedEvents } from './encoders/object.js';
export type { EtcdCreateRequest } from './etcd-session.js';
export { EtcdWatchSession } from './etcd-session.js';
export type { FieldSelection, IndexedField } from './field-index.js';
export type { WatchCallback, WatchSubscription } from './in-process.js';
export { WatchIterator, watchCallback } from './in-process.js';
export type { WatchCacheOptions } from './options.js';
export { realClock } from './options.js';
export type {
  Cancellation,
  EventView,
  FrameEncoder,
  FrameSink,
  TurnScheduler,
  WatchClock,
  WatcherInfo,
  WatchOptions,
  WatchResponse,
  WindowEntry,
} from './types.js';
export { ByteSize, CancelReason, WatcherId, WatchFilter } from './types.js';
export { Watcher, WatcherState } from './watcher.js';
