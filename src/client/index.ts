/** src/client: a typed client for etcd's v3 API over gRPC or JSON (etcetera's and etcd's). Public surface. */

export type { ClientOptions, Protocol } from './client.js';
export { Client } from './client.js';
export { prefixEnd, text, toBytes } from './codec.js';
export { ClientError, isClientError } from './errors.js';
export type { LeaseKeeperOptions } from './lease-keeper.js';
export { LeaseKeeper } from './lease-keeper.js';
export type { ClientTls, TransportOptions } from './transport.js';
export type * from './types.js';
export { SortOrder, SortTarget } from './types.js';
export type { WatchHandlers } from './watch.js';
export { Watch } from './watch.js';
