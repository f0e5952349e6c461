/** src/api: the etcd v3 JSON API over a member. Public surface. */
export { createApp, createRouter, DEFAULT_VERSION } from './app.js';
export { HTTP_STATUS, HTTP_STATUS_BY_GRPC, httpStatusOf } from './http-status.js';

export type { ApiLogger, ApiOptions } from './app.js';
export type { ErrorBody } from './respond.js';
