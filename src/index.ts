/**
 * etcetera's public entry point (the package's only export).
 *
 *   - the embedded store: `open({ dir })`, no HTTP, no Raft;
 *   - watches for embedded programs: a `Cacher` over the store, with `watchCallback` or
 *     `WatchIterator` (the same guarantees and backpressure as network watchers);
 *   - a member: `Member.start(resolveConfig({...}))`, what `etcetera serve` runs;
 *   - clients: `Client` for etcd's JSON API, `KubeClient` and `Informer` for the
 *     Kubernetes-style API;
 *   - a control plane (controllers and simulated nodes around a member) in one call:
 *     `startControlPlane({ nodes: 3 })`;
 *   - the error catalogue.
 */

export type { ClientOptions } from './client/index.js';
export { Client, ClientError } from './client/index.js';
export type { InformerHandlers, InformerOptions, KubeClientOptions } from './client/k8s/index.js';
export { Informer, KubeClient } from './client/k8s/index.js';
export { Resources } from './client/k8s/types.js';
export type { ControlPlane, StartControlPlaneOptions } from './controlplane/embedded.js';
export { kubeconfigFor, startControlPlane } from './controlplane/embedded.js';
export type { ErrorCode, ErrorDetails } from './errors.js';
export { ERRORS, EtceteraError, GrpcCode, isEtceteraError } from './errors.js';
export type { MemberConfig, MemberConfigInput, MemberOptions } from './server/index.js';
export { Member, resolveConfig } from './server/index.js';
export type * from './store/index.js';
export {
  decodeCommand,
  EmbeddedStore,
  encodeCommand,
  open,
  prefixEnd,
  Store,
} from './store/index.js';
export type { WatchCacheOptions, WatchCallback, WatchSubscription } from './watchcache/index.js';
export { Cacher, WatchIterator, watchCallback } from './watchcache/index.js';
