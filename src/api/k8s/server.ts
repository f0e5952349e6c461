/**
 * The request dispatcher of the Kubernetes face: path → route → verb → handler, with every
 * failure answered as a Status. Paths outside the face (see paths.ts) are left to the next
 * handler, so the etcd JSON API can share the listener.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { forbidden, type UserInfo } from '../../k8s/rbac.js';
import { methodNotAllowed, pathNotFound, StatusError, toStatusError } from '../../k8s/status.js';
import type { ResourceInfo, Verb } from '../../k8s/types.js';
import { auditRequest } from './audit.js';
import {
  AuthorizationMode,
  handleSelfSubjectAccessReview,
  handleSelfSubjectReview,
  handleSubjectAccessReview,
  impersonate,
  requestAttributes,
} from './authz.js';
import { handleBinding } from './binding.js';
import type { Kube, ResourceRequest } from './context.js';
import { handleDelete, handleDeleteCollection } from './delete.js';
import { sendDiscovery, versionInfo } from './discovery.js';
import { handleCreate, handleGet, handleUpdate } from './handlers.js';
import { handleList } from './list.js';
import { parseListOptions } from './list-options.js';
import type { OpenApi } from './openapi.js';
import { handlePatch } from './patch.js';
import { isKubernetesPath, parsePath, type ResourcePath, type Route } from './paths.js';
import { sendError, sendJson, sendText } from './respond.js';
import { handleScale } from './scale.js';
import { handleWatch } from './watch/http.js';

export interface KubeLogger {
  error(obj: object, msg?: string): void;
}

/** The served resource a path addresses, or 404. */
export function resolveResource(kube: Kube, p: ResourcePath): ResourceInfo {
  const info = kube.registry.get(p.group, p.version, p.resource);
  if (!info) throw pathNotFound();
  if (p.namespace !== undefined && info.scope === 'Cluster') throw pathNotFound();
  if (p.subresource !== undefined) {
    const ok =
      (p.subresource === 'status' && info.statusSubresource) ||
      (p.subresource === 'scale' && info.scaleSubresource) ||
      (p.subresource === 'binding' && info.group === '' && info.resource === 'pods');
    if (!ok || p.name === undefined) throw pathNotFound();
  }
  return info;
}

function requireVerb(info: ResourceInfo, verb: Verb): void {
  if (!info.verbs.includes(verb)) throw methodNotAllowed();
}

/**
 * Authorizes one request of the face (HTTP or websocket) of an authenticated user: the
 * user, or a 403 Status. Mutating requests are put in the audit log, refused ones too.
 */
export function admit(
  kube: Kube,
  req: IncomingMessage,
  url: URL,
  route: Route | undefined,
  user: UserInfo,
  res?: ServerResponse,
): UserInfo {
  const attrs = requestAttributes(user, req.method ?? 'GET', url.pathname, url.searchParams, route);
  if (res) auditRequest(kube.audit, req, res, attrs, kube.options.now);
  const d = kube.authorize(attrs);
  if (!d.allowed) throw forbidden(attrs, d.reason);
  return user;
}

const isReview = (info: ResourceInfo, group: string, resource: string) =>
  info.group === group && info.resource === resource;

async function serveResource(kube: Kube, rr: ResourceRequest): Promise<void> {
  const { req, path, info } = rr;
  const item = path.name !== undefined;
  if (req.method === 'POST' && !item) {
    if (isReview(info, 'authorization.k8s.io', 'selfsubjectaccessreviews'))
      return handleSelfSubjectAccessReview(kube, rr, rr.user, kube.authorize);
    if (
      isReview(info, 'authorization.k8s.io', 'subjectaccessreviews') ||
      isReview(info, 'authorization.k8s.io', 'localsubjectaccessreviews')
    )
      return handleSubjectAccessReview(kube, rr, kube.authorize);
    if (isReview(info, 'authentication.k8s.io', 'selfsubjectreviews'))
      return handleSelfSubjectReview(kube, rr, rr.user);
  }
  if (path.subresource === 'scale') return handleScale(kube, rr);
  if (path.subresource === 'binding') return handleBinding(kube, rr);
  switch (req.method) {
    case 'GET': {
      if (item) {
        requireVerb(info, 'get');
        return handleGet(kube, rr);
      }
      const o = parseListOptions(rr.query);
      requireVerb(info, o.watch ? 'watch' : 'list');
      if (o.watch) {
        await handleWatch(kube, rr, o);
        return;
      }
      return handleList(kube, rr, o);
    }
    case 'POST':
      if (item) throw methodNotAllowed();
      requireVerb(info, 'create');
      return handleCreate(kube, rr);
    case 'PUT':
      if (!item) throw methodNotAllowed();
      requireVerb(info, 'update');
      return handleUpdate(kube, rr);
    case 'PATCH':
      if (!item) throw methodNotAllowed();
      requireVerb(info, 'patch');
      return handlePatch(kube, rr);
    case 'DELETE':
      if (path.subresource !== undefined) throw methodNotAllowed();
      if (item) {
        requireVerb(info, 'delete');
        return handleDelete(kube, rr);
      }
      requireVerb(info, 'deletecollection');
      return handleDeleteCollection(kube, rr, parseListOptions(rr.query));
    default:
      throw methodNotAllowed();
  }
}

async function serve(
  kube: Kube,
  openapi: OpenApi,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  route: Route | undefined,
  user: UserInfo,
): Promise<void> {
  if (!route) throw pathNotFound();
  const accept = req.headers.accept;
  const isGet = req.method === 'GET' || req.method === 'HEAD';
  if (route.type !== 'resource' && !isGet) throw methodNotAllowed();
  switch (route.type) {
    case 'version':
      return sendJson(res, 200, versionInfo(kube));
    case 'discoveryRoot':
    case 'group':
    case 'groupVersion':
      return sendDiscovery(kube, res, accept, route);
    case 'openapiRoot':
      return sendText(res, 200, openapi.root());
    case 'openapiGroupVersion':
      return sendText(res, 200, openapi.groupVersion(route.group, route.version));
    case 'openapiV2':
      throw pathNotFound();
    case 'resource': {
      const info = resolveResource(kube, route);
      const rr: ResourceRequest = {
        req,
        res,
        query: url.searchParams,
        path: route,
        info,
        warnings: [],
        user,
      };
      return serveResource(kube, rr);
    }
  }
}

/** The request handler: answers Kubernetes paths, passes anything else to `next`. */
export function kubeHandler(
  kube: Kube,
  openapi: OpenApi,
  start: () => Promise<void>,
  logger?: KubeLogger,
): (req: IncomingMessage, res: ServerResponse, next: () => void) => void {
  return (req, res, next) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      next();
      return;
    }
    if (!isKubernetesPath(url.pathname)) {
      next();
      return;
    }
    // /version is asked by etcd clients too: it must not start the face (which creates the
    // default namespaces), so that an etcd-only member never writes under /registry/.
    // Under RBAC it does: deciding needs the policy, which the start writes.
    const route = parsePath(url.pathname);
    const lazy =
      url.pathname.startsWith('/version') &&
      kube.options.authorizationMode === AuthorizationMode.AlwaysAllow;
    kube
      .authenticate(req)
      .then(async (authenticated) => {
        if (!lazy) await start();
        const user = impersonate(req, authenticated, kube.authorize);
        admit(kube, req, url, route, user, res);
        return serve(kube, openapi, req, res, url, route, user);
      })
      .catch((err: unknown) => {
        if (!(err instanceof StatusError) && !(err as { statusMessage?: string }).statusMessage) {
          logger?.error({ err }, 'kubernetes API: unexpected failure');
        }
        if (res.headersSent) {
          // A stream already started (a watch): end it cleanly rather than resetting it.
          if (!res.writableEnded) res.end();
          return;
        }
        const se = toStatusError(err);
        // A body refused before it was read to the end (too large, too slow) leaves bytes on
        // the socket: close it rather than drain them.
        if ((se.httpCode === 413 || se.httpCode === 504) && !req.complete)
          res.setHeader('Connection', 'close');
        sendError(res, se);
      });
  };
}
