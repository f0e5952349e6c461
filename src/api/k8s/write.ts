/**
 * The write pipeline shared by create, update, patch and apply:
 *
 *   build the object → server-owned metadata → kind normalisation → kind hooks (CRDs) →
 *   mutating admission → validation (422) → validating admission → compare-and-swap
 *
 * Updates run as Kubernetes' GuaranteedUpdate: read the current object, compute the new one
 * from it, and swap on its mod_revision. A lost swap retries from a fresh read; when the new
 * object carries a resourceVersion (the client's precondition) that is not the current one,
 * the answer is 409 Conflict.
 */
import { admissionRequest } from '../../k8s/admission.js';
import { objectKey } from '../../k8s/keys.js';
import { trackUpdate } from '../../k8s/managed.js';
import { prepareCreate, prepareUpdate, sameStored } from '../../k8s/meta.js';
import { generateNameFrom } from '../../k8s/names.js';
import { normalizeObject } from '../../k8s/normalize.js';
import { alreadyExists, conflict, notFound, StatusError } from '../../k8s/status.js';
import type { KubeObject, ResourceInfo } from '../../k8s/types.js';
import { validateObject } from '../../k8s/validate.js';
import type { Compare } from '../../store/types.js';
import type { Kube } from './context.js';
import type { Guard, Stored } from './storage.js';

/** Per-kind steps beyond the generic pipeline (CRDs, namespaces). */
export interface KindHooks {
  /** Before validation on create and update: may change `obj` and throw 422. */
  prepare?(kube: Kube, obj: KubeObject, old: KubeObject | undefined): void;
  /** After a successful (not dry-run) write. */
  afterWrite?(kube: Kube, obj: KubeObject, revision: number): void | Promise<void>;
  /**
   * On create, after admission, called once with the object as requested: the step to run
   * before each swap (again after a lost one). The step may set fields from what the store
   * holds (a Service's clusterIP) and returns compares the swap must also hold, so that the
   * create is atomic with that reading. It may throw 422.
   */
  beforeCreate?(kube: Kube, obj: KubeObject): () => Promise<Compare[]>;
  /** Creates of this kind run one at a time in this process (see beforeCreate). */
  serialCreates?: boolean;
  /**
   * On update, after admission and before each swap: as beforeCreate's step, may set fields
   * of `next` from what the store holds (the clusterIP of a Service that needs one only now)
   * and returns compares the swap must also hold. It may throw 422.
   */
  beforeUpdate?(kube: Kube, next: KubeObject, old: KubeObject): Promise<Compare[]>;
}

/** The queue of each kind's serial creates, per face. */
const serialQueues = new WeakMap<Kube, Map<string, Promise<unknown>>>();

function serially<T>(kube: Kube, ref: string, run: () => Promise<T>): Promise<T> {
  let queues = serialQueues.get(kube);
  if (!queues) {
    queues = new Map();
    serialQueues.set(kube, queues);
  }
  const prev = queues.get(ref) ?? Promise.resolve();
  const next = prev.then(run, run);
  const tail = next.catch(() => undefined);
  queues.set(ref, tail);
  void tail.then(() => {
    if (queues.get(ref) === tail) queues.delete(ref);
  });
  return next;
}

const MAX_ATTEMPTS = 8;

export interface WriteOptions {
  dryRun: boolean;
  /** The request's field manager (managedFields). */
  manager: string;
  /** managedFields are already recorded (server-side apply did it). */
  tracked?: boolean;
}

async function admit(
  kube: Kube,
  info: ResourceInfo,
  op: 'CREATE' | 'UPDATE',
  sub: string,
  obj: KubeObject,
  old: KubeObject | undefined,
  dryRun: boolean,
): Promise<KubeObject> {
  const ns = obj.metadata.namespace ?? '';
  const name = obj.metadata.name ?? '';
  let next = obj;
  if (!kube.admission.empty) {
    const req = admissionRequest(info, op, sub, ns, name, obj, old, dryRun);
    next = (await kube.admission.mutate(req)) ?? obj;
  }
  validateObject(info, next, old);
  if (!kube.admission.empty) {
    await kube.admission.validate(admissionRequest(info, op, sub, ns, name, next, old, dryRun));
  }
  return next;
}

/**
 * The namespace a create goes into must exist and not be terminating. The cache answers
 * first; the swap compares the namespace's mod revision, so a stale answer only costs a retry
 * (`fresh`), and "not found" or "terminating" are only answered from a fresh read.
 */
async function namespaceGuard(kube: Kube, namespace: string, fresh: boolean): Promise<Guard> {
  const info = { group: '', resource: 'namespaces' };
  const key = objectKey(info, '', namespace);
  const terminating = (obj: KubeObject) =>
    (obj.status as { phase?: string } | undefined)?.phase === 'Terminating' ||
    obj.metadata.deletionTimestamp !== undefined;
  const hit = fresh ? undefined : kube.hub.get('/namespaces', key);
  if (hit && !terminating(hit.obj)) return { key, modRevision: hit.rv };
  const ns = await kube.storage.get(key);
  if (!ns) throw notFound({ group: '', resource: 'namespaces', name: namespace });
  if (terminating(ns.obj)) {
    throw new StatusError('Forbidden', info403(namespace), { name: namespace, kind: 'namespaces' });
  }
  return { key, modRevision: ns.modRevision };
}

const info403 = (ns: string) =>
  `unable to create new content in namespace ${ns} because it is being terminated`;

/** Creates an object; answers the stored object (resourceVersion set unless dry run). */
export async function createObject(
  kube: Kube,
  info: ResourceInfo,
  input: KubeObject,
  opts: WriteOptions,
): Promise<KubeObject> {
  const m = input.metadata;
  if ((m.name === undefined || m.name === '') && m.generateName) {
    m.name = generateNameFrom(m.generateName);
  }
  prepareCreate(info, input, kube.options.now());
  normalizeObject(info, input);
  kube.hooks.get(`${info.group}/${info.resource}`)?.prepare?.(kube, input, undefined);
  let obj = await admit(kube, info, 'CREATE', '', input, undefined, opts.dryRun);
  if (!opts.tracked)
    obj = trackUpdate(info, undefined, obj, opts.manager, undefined, kube.options.now());
  const name = obj.metadata.name as string;
  const ns = info.scope === 'Namespaced' ? (obj.metadata.namespace as string) : '';
  const key = objectKey(info, ns, name);
  const subject = { group: info.group, resource: info.resource, name };
  const ref = `${info.group}/${info.resource}`;
  const hooks = kube.hooks.get(ref);
  const step = hooks?.beforeCreate?.(kube, obj);
  const swap = async (): Promise<KubeObject> => {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const guard = ns ? await namespaceGuard(kube, ns, attempt > 0) : undefined;
      const extra = (await step?.()) ?? [];
      if (opts.dryRun) {
        if (await kube.storage.get(key)) throw alreadyExists(subject);
        return obj;
      }
      const out = await kube.storage.create(key, obj, guard, extra);
      if (out.ok) {
        obj.metadata.resourceVersion = String(out.revision);
        await hooks?.afterWrite?.(kube, obj, out.revision);
        return obj;
      }
      if (out.current) throw alreadyExists(subject);
      // The namespace (or what beforeCreate read) changed between the check and the swap:
      // check it again.
    }
    throw conflict(subject);
  };
  return hooks?.serialCreates ? serially(kube, ref, swap) : swap();
}

export interface UpdateSpec {
  info: ResourceInfo;
  namespace: string;
  name: string;
  subresource: 'status' | undefined;
  dryRun: boolean;
  /** The request's field manager (managedFields). */
  manager: string;
  /** managedFields are already recorded by `transform` (server-side apply). */
  tracked?: boolean;
  /**
   * The new object from (a private copy of) the current one. Its resourceVersion, if set,
   * is a precondition. Undefined current means the object does not exist.
   */
  transform(current: KubeObject): KubeObject | Promise<KubeObject>;
  /** Graceful deletion: set this deletionTimestamp (kept if one is set already). */
  markDeletion?: string;
  /** With markDeletion: the deletionGracePeriodSeconds to record (default 0). */
  deletionGracePeriodSeconds?: number;
  /** With markDeletion: a finalizer to add (foregroundDeletion, orphan). */
  addFinalizer?: string;
  /** Replace status (the namespace's Terminating phase). */
  status?: Record<string, unknown>;
}

export interface UpdateResult {
  obj: KubeObject;
  /** The object was removed (its last finalizer went away while it was being deleted). */
  deleted: boolean;
}

/**
 * The current object for a read-modify-swap. The first try takes it from the decoded cache
 * (no read barrier; a private copy, since the cache's objects are shared): it may be stale,
 * which the swap's compare catches, and every decision a stale copy could get wrong (a
 * precondition mismatch, "nothing changed", "not found") is taken again on a fresh read.
 */
export async function currentObject(
  kube: Kube,
  info: ResourceInfo,
  key: string,
  fromCache: boolean,
): Promise<{ stored: Pick<Stored, 'obj' | 'modRevision'> | undefined; cached: boolean }> {
  if (fromCache) {
    const hit = kube.hub.get(`${info.group}/${info.resource}`, key);
    if (hit)
      return { stored: { obj: structuredClone(hit.obj), modRevision: hit.rv }, cached: true };
  }
  return { stored: await kube.storage.get(key), cached: false };
}

/** GuaranteedUpdate: see the file comment. 404 when the object does not exist. */
export async function updateObject(kube: Kube, u: UpdateSpec): Promise<UpdateResult> {
  const { info } = u;
  const key = objectKey(info, info.scope === 'Namespaced' ? u.namespace : '', u.name);
  const subject = { group: info.group, resource: info.resource, name: u.name };
  let fromCache = true;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const { stored: cur, cached } = await currentObject(kube, info, key, fromCache);
    fromCache = false;
    if (!cur) throw notFound(subject);
    const curRv = String(cur.modRevision);
    const wanted = await u.transform(structuredClone(cur.obj));
    const pinned = wanted.metadata.resourceVersion;
    if (pinned !== undefined && pinned !== '' && pinned !== curRv) {
      if (cached) continue;
      throw conflict(subject);
    }
    let next = prepareUpdate(info, wanted, cur.obj, u.subresource);
    if (u.markDeletion && !next.metadata.deletionTimestamp) {
      next.metadata.deletionTimestamp = u.markDeletion;
      next.metadata.deletionGracePeriodSeconds = u.deletionGracePeriodSeconds ?? 0;
    }
    if (u.addFinalizer && !(next.metadata.finalizers ?? []).includes(u.addFinalizer)) {
      next.metadata.finalizers = [...(next.metadata.finalizers ?? []), u.addFinalizer];
    }
    if (u.status) next.status = u.status;
    normalizeObject(info, next);
    const hooks = kube.hooks.get(`${info.group}/${info.resource}`);
    hooks?.prepare?.(kube, next, cur.obj);
    next = await admit(kube, info, 'UPDATE', u.subresource ?? '', next, cur.obj, u.dryRun);
    const extra = (await hooks?.beforeUpdate?.(kube, next, cur.obj)) ?? [];
    if (!u.tracked) {
      next = trackUpdate(info, cur.obj, next, u.manager, u.subresource, kube.options.now());
    }
    next.metadata.resourceVersion = curRv;
    if (sameStored(next, cur.obj)) {
      if (cached) continue;
      return { obj: cur.obj, deleted: false };
    }
    // Removing the last finalizer of an object being deleted completes its deletion.
    // (An object being deleted without finalizers, a Pod waiting for its kubelet, stays.)
    const finished =
      !u.markDeletion &&
      next.metadata.deletionTimestamp !== undefined &&
      (next.metadata.finalizers ?? []).length === 0 &&
      (cur.obj.metadata.finalizers ?? []).length > 0;
    if (u.dryRun) {
      if (cached) continue;
      return { obj: next, deleted: finished };
    }
    const out = finished
      ? await kube.storage.delete(key, cur.modRevision)
      : await kube.storage.update(key, next, cur.modRevision, extra);
    if (out.ok) {
      if (!finished) {
        next.metadata.resourceVersion = String(out.revision);
        await hooks?.afterWrite?.(kube, next, out.revision);
      }
      return { obj: next, deleted: finished };
    }
    if (!out.current) throw notFound(subject);
    // Someone else wrote first: go again from their version. A resourceVersion the client
    // pinned no longer matches then, which is the 409 above.
  }
  throw conflict(subject);
}
