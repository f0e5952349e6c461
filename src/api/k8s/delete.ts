/**
 * delete and deletecollection. The body is an optional
 * DeleteOptions (kubectl sends `{"propagationPolicy":"Background"}`, client-node nothing);
 * `preconditions.uid` / `preconditions.resourceVersion` must match (409 otherwise).
 *
 * An object with finalizers is not removed: it gets a deletionTimestamp and stays until an
 * update removes its last finalizer. A Namespace is marked Terminating, everything in it is
 * deleted, then the Namespace itself. A CustomResourceDefinition takes its objects with it.
 *
 * propagationPolicy Foreground or Orphan marks the object deleted and adds the
 * `foregroundDeletion` or `orphan` finalizer; the garbage collector (src/controllers) then
 * deletes or orphans the dependants and removes the finalizer. Background (the default)
 * deletes at once and leaves the dependants to the garbage collector.
 *
 * With `gracefulPodDeletion`, a Pod bound to a node and not finished is deleted gracefully:
 * it gets a deletionTimestamp `gracePeriodSeconds` (default its
 * terminationGracePeriodSeconds, else 30) ahead and stays until its kubelet deletes it with
 * gracePeriodSeconds=0.
 */

import { admissionRequest } from '../../k8s/admission.js';
import { compileFilter } from '../../k8s/filter.js';
import { objectKey, prefixEndBytes, REGISTRY_PREFIX } from '../../k8s/keys.js';
import { timestamp } from '../../k8s/meta.js';
import { badRequest, conflict, notFound } from '../../k8s/status.js';
import { apiVersionOf, type KubeObject, type ResourceInfo, storageGroup } from '../../k8s/types.js';
import { asObject, parseJsonText, readBody } from './body.js';
import { type Kube, parseDryRun, type ResourceRequest } from './context.js';
import { sendObject } from './handlers.js';
import { listFromCache } from './list.js';
import type { ListOptions } from './list-options.js';
import { sendText } from './respond.js';
import { currentObject, updateObject } from './write.js';

interface Preconditions {
  uid?: string;
  resourceVersion?: string;
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  gracePeriodSeconds?: number;
}

const POLICIES = new Set(['Foreground', 'Background', 'Orphan']);

function readPolicy(body: Record<string, unknown>, rr: ResourceRequest, out: Preconditions): void {
  const policy = body.propagationPolicy ?? rr.query.get('propagationPolicy') ?? undefined;
  if (policy !== undefined && policy !== null) {
    if (typeof policy !== 'string' || !POLICIES.has(policy))
      throw badRequest(`propagationPolicy must be one of Foreground, Background, Orphan`);
    out.propagationPolicy = policy as Preconditions['propagationPolicy'];
  } else if (body.orphanDependents === true) out.propagationPolicy = 'Orphan';
  const grace = body.gracePeriodSeconds ?? rr.query.get('gracePeriodSeconds') ?? undefined;
  if (grace !== undefined && grace !== null) {
    const n = Number(grace);
    if (!Number.isSafeInteger(n)) throw badRequest('gracePeriodSeconds must be an integer');
    out.gracePeriodSeconds = Math.max(0, n);
  }
}

async function readDeleteOptions(kube: Kube, rr: ResourceRequest): Promise<Preconditions> {
  const buf = await readBody(rr.req, kube.options.maxBodyBytes, kube.options.readBodyTimeoutMs);
  const text = buf.toString('utf8');
  const fromQuery: Preconditions = {};
  if (text.trim() === '') {
    readPolicy({}, rr, fromQuery);
    return fromQuery;
  }
  const body = asObject(parseJsonText(text));
  readPolicy(body, rr, fromQuery);
  const pre = body.preconditions;
  if (pre === undefined || pre === null) return fromQuery;
  if (typeof pre !== 'object' || Array.isArray(pre))
    throw badRequest('preconditions must be an object');
  const p = pre as Record<string, unknown>;
  const out: Preconditions = fromQuery;
  if (typeof p.uid === 'string') out.uid = p.uid;
  if (typeof p.resourceVersion === 'string') out.resourceVersion = p.resourceVersion;
  return out;
}

const MAX_ATTEMPTS = 8;

/** Deletes one object; answers its last state. */
export async function deleteObject(
  kube: Kube,
  info: ResourceInfo,
  namespace: string,
  name: string,
  pre: Preconditions,
  dryRun: boolean,
): Promise<KubeObject> {
  const key = objectKey(info, info.scope === 'Namespaced' ? namespace : '', name);
  const subject = { group: info.group, resource: info.resource, name };
  let fromCache = true;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    // A cached copy may be stale: the swap's compare catches that, and any answer other
    // than a successful delete is given from a fresh read (see currentObject).
    const { stored: cur, cached } = await currentObject(kube, info, key, fromCache);
    fromCache = false;
    if (!cur) throw notFound(subject);
    const m = cur.obj.metadata;
    const preconditionsHold =
      (pre.uid === undefined || pre.uid === m.uid) &&
      (pre.resourceVersion === undefined || pre.resourceVersion === m.resourceVersion);
    const grace = podGrace(kube, info, cur.obj, pre);
    const policy = pre.propagationPolicy;
    const finalizer =
      policy === 'Foreground' ? 'foregroundDeletion' : policy === 'Orphan' ? 'orphan' : undefined;
    const special =
      (info.group === '' && info.resource === 'namespaces') ||
      (m.finalizers ?? []).length > 0 ||
      grace > 0 ||
      finalizer !== undefined;
    if (cached && (!preconditionsHold || special || dryRun)) continue;
    if (pre.uid !== undefined && pre.uid !== m.uid) {
      throw conflict(
        subject,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${m.uid ?? ''}`,
      );
    }
    if (pre.resourceVersion !== undefined && pre.resourceVersion !== m.resourceVersion) {
      throw conflict(
        subject,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${m.resourceVersion ?? ''}`,
      );
    }
    if (!kube.admission.empty) {
      const req = admissionRequest(info, 'DELETE', '', namespace, name, undefined, cur.obj, dryRun);
      await kube.admission.validate(req);
    }
    if (info.group === '' && info.resource === 'namespaces')
      return deleteNamespace(kube, cur.obj, dryRun);
    if (finalizer !== undefined && !m.deletionTimestamp)
      return markDeleting(kube, info, cur.obj, dryRun, { finalizer, grace });
    if ((m.finalizers ?? []).length > 0 || grace > 0)
      return markDeleting(kube, info, cur.obj, dryRun, { grace });
    if (dryRun) return cur.obj;
    const out = await kube.storage.delete(key, cur.modRevision);
    if (out.ok) {
      if (info.group === 'apiextensions.k8s.io' && info.resource === 'customresourcedefinitions') {
        kube.registry.removeCrd(name, out.revision);
        await deleteCrdObjects(kube, cur.obj);
      }
      return cur.obj;
    }
    if (!out.current) throw notFound(subject);
  }
  throw conflict(subject);
}

/**
 * A bound, unfinished Pod's grace period when deletion is graceful (0: delete now). A Pod
 * already being deleted is removed by a delete with gracePeriodSeconds=0 (its kubelet's).
 */
function podGrace(kube: Kube, info: ResourceInfo, obj: KubeObject, pre: Preconditions): number {
  if (!kube.options.gracefulPodDeletion || info.group !== '' || info.resource !== 'pods') return 0;
  const spec = (obj.spec ?? {}) as { nodeName?: unknown; terminationGracePeriodSeconds?: unknown };
  const phase = (obj.status as { phase?: unknown } | undefined)?.phase;
  if (typeof spec.nodeName !== 'string' || spec.nodeName === '') return 0;
  if (phase === 'Succeeded' || phase === 'Failed') return 0;
  if (pre.gracePeriodSeconds !== undefined) return pre.gracePeriodSeconds;
  if (obj.metadata.deletionTimestamp) return 1; // stays until its kubelet says 0
  const t = spec.terminationGracePeriodSeconds;
  return typeof t === 'number' && Number.isSafeInteger(t) && t >= 0 ? t : 30;
}

/** Graceful deletion: set deletionTimestamp; the last finalizer's removal deletes it. */
async function markDeleting(
  kube: Kube,
  info: ResourceInfo,
  obj: KubeObject,
  dryRun: boolean,
  o: { finalizer?: string; grace?: number } = {},
): Promise<KubeObject> {
  if (obj.metadata.deletionTimestamp) return obj;
  const grace = o.grace ?? 0;
  const r = await updateObject(kube, {
    info,
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name ?? '',
    subresource: undefined,
    dryRun,
    transform: (cur) => cur,
    markDeletion: timestamp(kube.options.now() + grace * 1000),
    deletionGracePeriodSeconds: grace,
    ...(o.finalizer ? { addFinalizer: o.finalizer } : {}),
    manager: 'kube-apiserver',
  });
  return r.obj;
}

/** Marks the namespace Terminating, deletes its contents, then the namespace. */
async function deleteNamespace(kube: Kube, ns: KubeObject, dryRun: boolean): Promise<KubeObject> {
  const name = ns.metadata.name ?? '';
  const info = kube.registry.get('', 'v1', 'namespaces') as ResourceInfo;
  if (dryRun) return ns;
  const terminating = await updateObject(kube, {
    info,
    namespace: '',
    name,
    subresource: undefined,
    dryRun: false,
    transform: (cur) => cur,
    markDeletion: timestamp(kube.options.now()),
    status: { phase: 'Terminating' },
    manager: 'kube-apiserver',
  });
  // Every resource, served or not (objects of a deleted CRD too): `/registry/<g>/<r>/<ns>/`.
  const refs = new Set(
    kube.registry.namespacedStorage().map((i) => `${storageGroup(i.group)}/${i.resource}`),
  );
  for (const ref of kube.hub.refs()) {
    const [g = '', r = ''] = ref.split('/');
    refs.add(`${storageGroup(g)}/${r}`);
  }
  const prefixes = [...refs].map((r) => `${REGISTRY_PREFIX}${r}/${name}/`);
  await kube.storage.deletePrefixes(prefixes, prefixEndBytes);
  const key = objectKey(info, '', name);
  const cur = await kube.storage.get(key);
  if (cur) await kube.storage.delete(key, cur.modRevision);
  return terminating.obj;
}

/** A deleted CRD's objects go with it. */
async function deleteCrdObjects(kube: Kube, crd: KubeObject): Promise<void> {
  const spec = (crd.spec ?? {}) as { group?: unknown; names?: { plural?: unknown } };
  if (typeof spec.group !== 'string' || typeof spec.names?.plural !== 'string') return;
  const prefix = `${REGISTRY_PREFIX}${spec.group}/${spec.names.plural}/`;
  await kube.storage.deletePrefixes([prefix], prefixEndBytes);
}

export async function handleDelete(kube: Kube, rr: ResourceRequest): Promise<void> {
  const dryRun = parseDryRun(rr.query);
  const pre = await readDeleteOptions(kube, rr);
  const obj = await deleteObject(
    kube,
    rr.info,
    rr.path.namespace ?? '',
    rr.path.name ?? '',
    pre,
    dryRun,
  );
  sendObject(kube, rr, 200, obj);
}

/** deletecollection: every object the selectors match, one by one; answers their list. */
export async function handleDeleteCollection(
  kube: Kube,
  rr: ResourceRequest,
  o: ListOptions,
): Promise<void> {
  const dryRun = parseDryRun(rr.query);
  const { propagationPolicy, gracePeriodSeconds } = await readDeleteOptions(kube, rr);
  const policy = {
    ...(propagationPolicy ? { propagationPolicy } : {}),
    ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}),
  };
  const filter = compileFilter(rr.info, rr.path.namespace, o.labelSelector, o.fieldSelector);
  const fresh = await kube.storage.currentRevision();
  await kube.hub.waitFresh(fresh, kube.options.freshTimeoutMs);
  const page = listFromCache(kube, rr.info, filter, 0, undefined);
  const deleted: string[] = [];
  for (const [, entry] of page.items) {
    const m = entry.obj.metadata;
    try {
      const obj = await deleteObject(
        kube,
        rr.info,
        m.namespace ?? '',
        m.name ?? '',
        policy,
        dryRun,
      );
      deleted.push(
        JSON.stringify({ ...obj, apiVersion: apiVersionOf(rr.info), kind: rr.info.kind }),
      );
    } catch (e) {
      if ((e as { status?: { code?: number } }).status?.code !== 404) throw e;
    }
  }
  const meta = JSON.stringify({ resourceVersion: String(kube.hub.revision) });
  sendText(
    rr.res,
    200,
    `{"kind":"${rr.info.listKind}","apiVersion":"${apiVersionOf(rr.info)}","metadata":${meta},"items":[${deleted.join(',')}]}`,
  );
}
