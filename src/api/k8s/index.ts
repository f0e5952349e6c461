/**
 * src/api/k8s: the Kubernetes-style versioned REST API that kubectl and client libraries use,
 * over one member. Public surface.
 *
 *   const app = express();
 *   const kube = mountKubernetes(app, member);
 *   server.on('upgrade', (req, socket, head) => kube.handleUpgrade(req, socket, head) || socket.destroy());
 *   kube.admission.validating({ name: 'no-latest', validate: (r) => ... });
 *   ...
 *   await kube.close();   // ends every watch stream cleanly before the listener closes
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Express, Router } from 'express';
import { Admission } from '../../k8s/admission.js';
import { CRD_REF } from '../../k8s/crd.js';
import { KindRegistry } from '../../k8s/registry.js';
import type { MemberApi } from '../../server/types.js';
import { Cacher } from '../../watchcache/index.js';
import { authenticator } from './auth.js';
import { AuthorizationMode, authorizerFor, ensureBootstrapPolicy } from './authz.js';
import { type Kube, type KubeOptions, resolveKubeOptions } from './context.js';
import { crdHooks, syncCrds } from './crd-sync.js';
import { ensureDefaultNamespaces } from './namespaces.js';
import { OpenApi } from './openapi.js';
import { type KubeLogger, kubeHandler } from './server.js';
import { SERVICES_REF, serviceHooks } from './service-ips.js';
import { ObjectStorage } from './storage.js';
import { KubeHub } from './watch/hub.js';
import { kubeUpgrade } from './watch/ws.js';
import type { KindHooks } from './write.js';

export interface KubeFace {
  /**
   * Starts the face (load, follow, default namespaces) if no request did yet, and resolves
   * once it serves. Requests wait for it by themselves.
   */
  readonly ready: Promise<void>;
  readonly registry: KindRegistry;
  /** Register typed mutating and validating admission hooks here. */
  readonly admission: Admission;
  /** The decoded object cache and the open watches (tests and benchmarks look inside). */
  readonly hub: KubeHub;
  /** For the HTTP server's 'upgrade' event: websocket watches. False for other paths. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Ends every watch stream cleanly and stops following the member. */
  close(): Promise<void>;
}

export interface MountOptions extends KubeOptions {
  logger?: KubeLogger;
}

/** Serves the Kubernetes paths of `app` (others fall through) for `member`. */
export function mountKubernetes(
  app: Express | Router,
  member: MemberApi,
  options: MountOptions = {},
): KubeFace {
  const resolved = resolveKubeOptions(options, member);
  // The watch cache is made on first use too: a member serving only the etcd API pays nothing.
  let cacher = options.cacher;
  const cacherOf = (): Cacher => {
    cacher ??= new Cacher(member.watchSource);
    return cacher;
  };
  const registry = new KindRegistry();
  const hub = new KubeHub(member.watchSource, cacherOf, registry);
  const hooks = new Map<string, KindHooks>([
    [CRD_REF, crdHooks],
    [SERVICES_REF, serviceHooks],
  ]);
  const kube: Kube = {
    member,
    registry,
    hub,
    get cacher() {
      return cacherOf();
    },
    storage: new ObjectStorage(member),
    admission: new Admission(),
    options: resolved,
    hooks,
    authenticate: authenticator(options.authentication),
    authorize: authorizerFor(resolved.authorizationMode, hub),
    audit: options.audit,
  };
  let stopSync: (() => void) | undefined;
  let closed = false;
  // Started by the first Kubernetes request, so a member that only serves the etcd API
  // never loads, watches or writes anything for this face.
  let started: Promise<void> | undefined;
  let namespaces: Promise<void> | undefined;
  let policy: Promise<void> | undefined;
  const start = async (): Promise<void> => {
    // A failed start (no leader yet, say) is tried again by the next request.
    started ??= (async () => {
      await hub.start();
      if (!closed) stopSync ??= syncCrds(kube);
    })().catch((e: unknown) => {
      started = undefined;
      throw e;
    });
    await started;
    if (resolved.authorizationMode === AuthorizationMode.RBAC) {
      policy ??= ensureBootstrapPolicy(kube).catch((e: unknown) => {
        policy = undefined;
        throw e;
      });
      await policy;
    }
    if (resolved.createDefaultNamespaces) {
      namespaces ??= ensureDefaultNamespaces(kube).catch(() => {
        namespaces = undefined;
      });
      await namespaces;
    }
  };
  const ticker = setInterval(
    () =>
      hub.watchers.tick(resolved.now(), {
        keepaliveMs: resolved.keepaliveMs,
        bookmarkIntervalMs: resolved.bookmarkIntervalMs,
      }),
    Math.max(10, Math.min(1000, Math.floor(resolved.keepaliveMs / 2))),
  );
  ticker.unref();
  const openapi = new OpenApi(kube);
  const upgrade = kubeUpgrade(kube, start);
  app.use(kubeHandler(kube, openapi, start, options.logger));
  return {
    get ready() {
      return start();
    },
    registry,
    admission: kube.admission,
    hub,
    handleUpgrade: (req, socket, head) => upgrade.handle(req, socket, head),
    async close() {
      closed = true;
      clearInterval(ticker);
      stopSync?.();
      upgrade.close();
      hub.stop();
      if (options.cacher === undefined) cacher?.close();
      await options.audit?.close();
    },
  };
}

export type {
  AdmissionDenial,
  AdmissionMatch,
  AdmissionRequest,
  MutatingHook,
  ValidatingHook,
} from '../../k8s/admission.js';
export { Admission, Operation } from '../../k8s/admission.js';
export { StatusError } from '../../k8s/status.js';
export type { KubeObject, ObjectMeta, ResourceInfo } from '../../k8s/types.js';
export type { KubeOptions } from './context.js';
export type { KubeLogger } from './server.js';
