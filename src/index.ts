/**
 * etcetera's public entry point (the package's only export). Embedded use needs nothing but
 * `open`; the member, API and client entry points join here as they land.
 */
export { EtceteraError, ERRORS, GrpcCode, isEtceteraError } from './errors.js';
export type { ErrorCode, ErrorDetails } from './errors.js';
export { decodeCommand, EmbeddedStore, encodeCommand, open, prefixEnd, Store } from './store/index.js';
export type * from './store/index.js';
