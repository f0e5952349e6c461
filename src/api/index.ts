/** src/api: the etcd v3 JSON API over a member. Public surface. */

export type { ApiLogger, ApiOptions, EtcdApi } from './app.js';
export { createEtcdApi, createRouter, DEFAULT_VERSION } from './app.js';
export { HTTP_STATUS, HTTP_STATUS_BY_GRPC, httpStatusOf } from './http-status.js';
export type { ErrorBody } from './respond.js';
export { WATCH_PATH } from './watch-mount.js';
