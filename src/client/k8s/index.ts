/** src/client/k8s: a typed Kubernetes resource client and informer. Public surface. */

export type { IndexFunc } from './cache.js';
export { NAMESPACE_INDEX, ObjectCache } from './cache.js';
export type { KubeClientOptions } from './client.js';
export { KubeClient } from './client.js';
export { isKubeApiError, KubeApiError } from './errors.js';
export type { KubeTransportOptions, Query } from './http.js';
export { KubeTransport } from './http.js';
export type { InformerHandlers, InformerOptions, InformerStats } from './informer.js';
export { Informer } from './informer.js';
export type { DeleteOptions, ListOptions, WatchOptions, WriteOptions } from './resource-client.js';
export { PatchType, ResourceClient } from './resource-client.js';
export type * from './types.js';
export { apiVersionOf, objectKey, Resources, WatchEventType } from './types.js';
export type { OpenWatchOptions, WatchStream } from './watch.js';
