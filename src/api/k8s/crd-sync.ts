/**
 * CustomResourceDefinitions in a running face: a CRD write is checked and gets its status in
 * the same write (`crdHooks`, over src/k8s/crd.ts), and once stored installs one served
 * resource per served version in the registry, so discovery, OpenAPI and routing pick it up
 * at once.
 *
 * Every member learns CRDs from the event stream (`syncCrds`), so all of them serve the same
 * kinds; the member that took the write also installs it before answering, so the client's
 * next request finds it.
 */
import { CRD_REF, installCrd, prepareCrd } from '../../k8s/crd.js';
import type { Kube } from './context.js';
import type { KubeEvent } from './watch/events.js';
import type { KindHooks } from './write.js';

/** Keeps the registry in step with the CRDs the event stream shows (every member). */
export function syncCrds(kube: Kube): () => void {
  for (const [, entry] of kube.hub.cacheFor(CRD_REF, 'apiextensions.k8s.io').scan('')) {
    installCrd(kube.registry, entry.obj, entry.rv);
  }
  return kube.hub.onEvents((events: readonly KubeEvent[]) => {
    for (const e of events) {
      if (e.ref !== CRD_REF) continue;
      if (e.obj) installCrd(kube.registry, e.obj.obj, e.revision);
      else kube.registry.removeCrd(e.name, e.revision);
    }
  });
}

export const crdHooks: KindHooks = {
  prepare(kube, obj, old) {
    prepareCrd(kube.registry, obj, old, kube.options.now());
  },
  afterWrite(kube, obj, revision) {
    installCrd(kube.registry, obj, revision);
  },
};
