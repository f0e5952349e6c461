/** src/store: the revisioned key-value store. Public surface. */

export { prefixEnd } from '../wire/bytes.js';
export { decodeCommand, encodeCommand } from './codec.js';
export type { DeleteOptions, EmbeddedOptions, KeyLike, PutOptions } from './embedded.js';
export { EmbeddedStore, open, toBytes } from './embedded.js';
export type { ApplyEntry, ApplyOutcome, StoreOptions } from './store.js';
export { Store } from './store.js';
export type * from './types.js';
export { AppliedIndex, LeaseId, NO_LEASE, Revision } from './types.js';
