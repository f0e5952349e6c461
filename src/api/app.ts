/**
 * The etcd v3 JSON API as an express 5 app over one member.
 *
 * Every route is a POST of one JSON message, dispatched from a table (kv.ts, lease.ts,
 * cluster.ts) by exact path (`/v3beta/` paths as their `/v3/` twins, as etcd 3.4 serves them); /v3/watch streams (watch-mount.ts); GET /health, /livez, /readyz
 * and /healthz (health.ts), the live dashboard under /dashboard (dashboard/), /metrics and
 * /version are plain handlers. The
 * request path of a POST route, in order, and who may refuse it:
 *   1. the raw body is read up to a byte bound (body.ts)          → request is too large
 *   2. it is parsed as JSON                                       → malformed JSON
 *   3. the route decodes it (schema, base64, int64, enums)        → bad or unknown field
 *   4. the decoded write is measured against --max-request-bytes  → request is too large
 *   5. the member reads or proposes it                            → the member's errors
 * Nothing reaches the member before step 5, so a refused request changes nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { EtceteraError, GrpcCode, isEtceteraError } from '../errors.js';
import type { MemberApi } from '../server/types.js';
import type { Cacher } from '../watchcache/index.js';
import { type AccessOptions, AccessPolicy } from './access.js';
import { DEFAULT_READ_BODY_TIMEOUT_MS, parseJson, rawBodyLimit, readBody } from './body.js';
import { isDashboardPath, mountDashboard } from './dashboard/index.js';
import { authRoutes } from './etcd/auth.js';
import { clusterRoutes } from './etcd/cluster.js';
import { kvRoutes } from './etcd/kv.js';
import { leaseRoutes } from './etcd/lease.js';
import { maintenanceRoutes } from './etcd/maintenance.js';
import { canonicalEtcdPath } from './etcd/paths.js';
import { callerContext, httpCredentials, type Route, type RouteContext } from './etcd/route.js';
import { SNAPSHOT_PATH, serveSnapshot } from './etcd/snapshot.js';
import { isHealthPath, mountHealth } from './health.js';
import { type MountOptions, mountKubernetes } from './k8s/index.js';
import { apiMetrics } from './metrics.js';
import { routeNotFound, sendError, sendJson, streamChunk, streamErrorChunk } from './respond.js';
import { WATCH_PATH, WatchMount, type WatchMountOptions } from './watch-mount.js';

export interface ApiLogger {
  error(obj: object, msg?: string): void;
}

export interface ApiOptions {
  /** What GET /version reports. Default etcd 3.4's: server 3.4.23, cluster 3.4.0. */
  version?: { server: string; cluster: string };
  /** Overrides the member's --max-request-bytes (tests use a small one). */
  maxRequestBytes?: number;
  /** Where failures that are not request errors are reported (pino fits). */
  logger?: ApiLogger;
  /** A watch cache to share with other faces; default: one made on the first watch. */
  cacher?: Cacher;
  /** Watch stream tuning (fragment size, per-stream high water mark). */
  watch?: WatchMountOptions['watch'];
  /** The Kubernetes face on the same listener (src/api/k8s); false leaves it out. */
  kubernetes?: MountOptions | false;
  /** Origin and Host checks for both faces (access.ts); default: no CORS, local names. */
  access?: AccessOptions;
  /** --read-body-timeout for both faces' request bodies (default 60 s; watch streams exempt). */
  readBodyTimeoutMs?: number;
}

/** The etcd face of a member: the app, its websocket upgrades, and its shutdown. */
export interface EtcdApi {
  /** The whole app: routes, JSON 404 for unknown paths, JSON 500 for bugs. */
  readonly app: Express;
  /** The routes alone (unknown paths fall through), to mount beside other faces. */
  readonly router: express.Router;
  /** For the HTTP server's 'upgrade' event: true when it took the socket (ws on /v3/watch). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Ends watch streams and the watch cache this face made. */
  close(): Promise<void>;
}

export const DEFAULT_VERSION = { server: '3.4.23', cluster: '3.4.0' } as const;

const POST_ROUTES: ReadonlyMap<string, Route> = new Map(
  Object.entries({
    ...kvRoutes,
    ...leaseRoutes,
    ...clusterRoutes,
    ...maintenanceRoutes,
    ...authRoutes,
  }),
);
const GET_ROUTES = new Set(['/health', '/metrics', '/version']);

/** The etcd face over `member`: routes, /v3/watch (HTTP stream and websockets), lifecycle. */
export function createEtcdApi(member: MemberApi, options: ApiOptions = {}): EtcdApi {
  const maxRequestBytes = options.maxRequestBytes ?? member.maxRequestBytes;
  const watch = new WatchMount(member, {
    cacher: options.cacher,
    maxRequestBytes,
    watch: options.watch,
  });
  const router = express.Router();
  const dashboard = mountDashboard(router, member);
  router.use(buildRouter(member, options, watch));
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Before either face: a web page elsewhere, or a rebound DNS name, gets no further.
  const access = new AccessPolicy(options.access);
  app.use(access.middleware());
  // The Kubernetes face first: it answers /api, /apis, /openapi and /version (with the etcd
  // fields merged in), and leaves every other path to the etcd routes.
  const version = options.version ?? DEFAULT_VERSION;
  const kube =
    options.kubernetes === false
      ? undefined
      : mountKubernetes(app, member, {
          logger: options.logger,
          cacher: options.cacher,
          versionExtra: { etcdserver: version.server, etcdcluster: version.cluster },
          ...(options.readBodyTimeoutMs === undefined
            ? {}
            : { readBodyTimeoutMs: options.readBodyTimeoutMs }),
          ...options.kubernetes,
        });
  app.use(router);
  app.use((req: Request, res: Response) => sendError(res, routeNotFound(req.path)));
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (!isEtceteraError(err)) options.logger?.error({ err }, 'etcd API: unexpected failure');
    sendError(res, err);
  });
  return {
    app,
    router,
    handleUpgrade: (req, socket, head) =>
      access.refuseUpgrade(req, socket) ||
      watch.handleUpgrade(req, socket, head) ||
      (kube?.handleUpgrade(req, socket, head) ?? false),
    close: async () => {
      dashboard.close();
      await kube?.close();
      await watch.close();
    },
  };
}

/** The routes alone, unknown paths falling through (createEtcdApi's `router`). */
export function createRouter(member: MemberApi, options: ApiOptions = {}): express.Router {
  return createEtcdApi(member, options).router;
}

function buildRouter(member: MemberApi, options: ApiOptions, watch: WatchMount): express.Router {
  const router = express.Router();
  const ctx: RouteContext = {
    member,
    maxRequestBytes: options.maxRequestBytes ?? member.maxRequestBytes,
  };
  const bodyLimit = rawBodyLimit(ctx.maxRequestBytes);
  const bodyTimeoutMs = options.readBodyTimeoutMs ?? DEFAULT_READ_BODY_TIMEOUT_MS;
  const metrics = apiMetrics(member.metrics);
  const version = options.version ?? DEFAULT_VERSION;

  router.use((req: Request, res: Response, next: NextFunction) => {
    const path = canonicalEtcdPath(req.path);
    if (path === WATCH_PATH) {
      if (req.method === 'OPTIONS') return sendPreflight(res);
      if (req.method !== 'POST') return methodNotAllowed(res, 'POST');
      return watch.http(req, res);
    }
    if (path === SNAPSHOT_PATH) {
      if (req.method === 'OPTIONS') return sendPreflight(res);
      if (req.method !== 'POST') return methodNotAllowed(res, 'POST');
      return void callerContext(ctx, httpCredentials(req)).then(
        (own) => serveSnapshot(req, res, own.member, bodyLimit, bodyTimeoutMs),
        (e) => sendError(res, e),
      );
    }
    const route = POST_ROUTES.get(path);
    if (route === undefined) return next();
    if (req.method === 'OPTIONS') return sendPreflight(res);
    if (req.method !== 'POST') return methodNotAllowed(res, 'POST');
    const started = process.hrtime.bigint();
    res.once('finish', () =>
      metrics.observe(path, res.statusCode, Number(process.hrtime.bigint() - started) / 1e9),
    );
    void servePost(req, res, route, ctx, { bytes: bodyLimit, ms: bodyTimeoutMs }, options.logger);
  });
  mountHealth(router, member);
  router.get('/version', (_req, res) => {
    sendJson(res, 200, { etcdserver: version.server, etcdcluster: version.cluster });
  });
  router.get('/metrics', (_req, res, next) => {
    member.metrics
      .metrics()
      .then((text) => {
        res.writeHead(200, { 'Content-Type': member.metrics.contentType });
        res.end(text);
      })
      .catch(next);
  });
  router.use((req: Request, res: Response, next: NextFunction) => {
    if (!GET_ROUTES.has(req.path) && !isHealthPath(req.path) && !isDashboardPath(req.path))
      return next();
    if (req.method === 'OPTIONS') return sendPreflight(res);
    methodNotAllowed(res, 'GET');
  });
  return router;
}

async function servePost(
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  ctx: RouteContext,
  bodyLimit: { bytes: number; ms: number },
  logger: ApiLogger | undefined,
): Promise<void> {
  let answer: unknown;
  try {
    const body = parseJson(await readBody(req, bodyLimit.bytes, bodyLimit.ms));
    const own = await callerContext(ctx, httpCredentials(req));
    answer = await route.handle(body, own);
  } catch (err) {
    if (res.destroyed) return; // the client left; nobody to answer
    if (!isEtceteraError(err)) logger?.error({ err }, 'etcd API: unexpected failure');
    // A body refused before it was read to the end (too large, too slow) leaves bytes on the
    // socket: close it rather than drain them.
    const unread = !req.complete;
    const headers: Record<string, string> = unread ? { Connection: 'close' } : {};
    if (route.stream && isEtceteraError(err) && !isRequestError(err)) {
      const { status, text } = streamErrorChunk(err);
      res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
      res.end(text);
      return;
    }
    sendError(res, err, headers);
    return;
  }
  if (route.stream) {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(streamChunk(answer));
  } else {
    sendJson(res, 200, answer);
  }
}

/** Errors of the request itself, answered before a stream would start. */
function isRequestError(err: EtceteraError): boolean {
  return err.grpcCode === GrpcCode.InvalidArgument;
}

function methodNotAllowed(res: Response, allow: string): void {
  sendError(res, new EtceteraError('ERR_METHOD_NOT_ALLOWED'), { Allow: allow });
}

/** OPTIONS without a browser's Origin (a preflight from an allowed origin is answered in access.ts). */
function sendPreflight(res: Response): void {
  res.writeHead(200);
  res.end();
}
