/**
 * A typed client for one resource (built-in or custom, namespaced or not): get, list,
 * create, update, patch (JSON, merge, strategic, apply), delete, deletecollection and
 * watch, with Kubernetes' query parameters. A namespaced resource is used either in one
 * namespace (`client.resource(ref, 'default')`) or across all (no namespace: list and
 * watch only, as in Kubernetes).
 */
import type { KubeTransport, Query } from './http.js';
import {
  apiVersionOf,
  type KubeList,
  type KubeObject,
  type ResourceRef,
  type Status,
} from './types.js';
import { openWatch, type WatchStream } from './watch.js';

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  /** '' (default: most recent, consistent), '0' (any), or a resourceVersion. */
  resourceVersion?: string;
  resourceVersionMatch?: 'Exact' | 'NotOlderThan';
  timeoutSeconds?: number;
  signal?: AbortSignal;
}

export interface WatchOptions {
  labelSelector?: string;
  fieldSelector?: string;
  /** Absent, '' or '0': synthetic ADDED events for what exists, then changes. */
  resourceVersion?: string;
  allowWatchBookmarks?: boolean;
  timeoutSeconds?: number;
  /** With resourceVersionMatch NotOlderThan: initial events end with a bookmark. */
  sendInitialEvents?: boolean;
  resourceVersionMatch?: 'NotOlderThan';
  signal?: AbortSignal;
  /** Fail the stream when nothing (not even a keepalive) came for this long; 0: never. */
  idleTimeoutMs?: number;
}

export interface WriteOptions {
  dryRun?: boolean;
  fieldManager?: string;
  fieldValidation?: 'Strict' | 'Warn' | 'Ignore';
  signal?: AbortSignal;
}

export const PatchType = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;
export type PatchType = keyof typeof PatchType;

export interface DeleteOptions extends Omit<WriteOptions, 'fieldManager' | 'fieldValidation'> {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  gracePeriodSeconds?: number;
  /** The delete fails with 409 unless the object still has this uid / resourceVersion. */
  preconditions?: { uid?: string; resourceVersion?: string };
}

function writeQuery(o: WriteOptions | undefined): Query {
  return {
    dryRun: o?.dryRun ? 'All' : undefined,
    fieldManager: o?.fieldManager,
    fieldValidation: o?.fieldValidation,
  };
}

function listQuery(o: ListOptions | WatchOptions | undefined): Query {
  const q: Query = {};
  if (!o) return q;
  for (const k of [
    'labelSelector',
    'fieldSelector',
    'limit',
    'continue',
    'resourceVersion',
    'resourceVersionMatch',
    'timeoutSeconds',
    'allowWatchBookmarks',
    'sendInitialEvents',
  ] as const) {
    const v = (o as Record<string, unknown>)[k];
    if (v !== undefined) q[k] = v as string | number | boolean;
  }
  return q;
}

export class ResourceClient<T extends KubeObject = KubeObject> {
  constructor(
    private readonly transport: KubeTransport,
    readonly ref: ResourceRef,
    /** The namespace of a namespaced resource; undefined: all namespaces. */
    readonly namespace?: string,
  ) {
    if (!ref.namespaced && namespace !== undefined) {
      throw new TypeError(`${ref.resource} is cluster-scoped: no namespace`);
    }
  }

  /** The same resource in another namespace. */
  inNamespace(namespace: string | undefined): ResourceClient<T> {
    return new ResourceClient<T>(this.transport, this.ref, namespace);
  }

  get apiVersion(): string {
    return apiVersionOf(this.ref);
  }

  /** `/api/v1/namespaces/ns/pods[/name[/sub]]` (or the cluster-wide collection). */
  path(name?: string, subresource?: string): string {
    const { group, version, resource } = this.ref;
    let p = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
    if (this.ref.namespaced && this.namespace !== undefined)
      p += `/namespaces/${encodeURIComponent(this.namespace)}`;
    p += `/${resource}`;
    if (name !== undefined) p += `/${encodeURIComponent(name)}`;
    if (subresource !== undefined) p += `/${subresource}`;
    return p;
  }

  private itemPath(name: string, subresource?: string): string {
    if (this.ref.namespaced && this.namespace === undefined) {
      throw new TypeError(`${this.ref.resource} is namespaced: choose a namespace first`);
    }
    if (name === '') throw new TypeError('a name is required');
    return this.path(name, subresource);
  }

  get(name: string, options: { resourceVersion?: string; signal?: AbortSignal } = {}): Promise<T> {
    return this.transport.request<T>({
      method: 'GET',
      path: this.itemPath(name),
      query: { resourceVersion: options.resourceVersion },
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  list(options: ListOptions = {}): Promise<KubeList<T>> {
    return this.transport.request<KubeList<T>>({
      method: 'GET',
      path: this.path(),
      query: listQuery(options),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /**
   * Every page of a list (limit + continue), one consistent snapshot: the items of all pages
   * and the resourceVersion of the first. A continue token that expired mid-way rejects with
   * 410; callers re-list.
   */
  async listAll(options: ListOptions & { pageSize?: number } = {}): Promise<KubeList<T>> {
    const { pageSize = 500, ...rest } = options;
    const first = await this.list({ ...rest, limit: pageSize });
    const items = [...first.items];
    let token = first.metadata.continue;
    while (token) {
      const page = await this.list({
        ...rest,
        limit: pageSize,
        continue: token,
        resourceVersion: undefined,
      });
      items.push(...page.items);
      token = page.metadata.continue;
    }
    const { continue: _ignored, ...meta } = first.metadata;
    return { ...first, metadata: meta, items };
  }

  /** POST; `apiVersion`, `kind` and `metadata.namespace` may be left out. */
  create(
    obj: { metadata: KubeObject['metadata'] } & Record<string, unknown>,
    options: WriteOptions = {},
  ): Promise<T> {
    return this.transport.request<T>({
      method: 'POST',
      path: this.itemPathless(),
      query: writeQuery(options),
      body: obj,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  private itemPathless(): string {
    if (this.ref.namespaced && this.namespace === undefined) {
      throw new TypeError(`${this.ref.resource} is namespaced: choose a namespace first`);
    }
    return this.path();
  }

  /** PUT: a compare-and-swap on metadata.resourceVersion when it is set (409 Conflict). */
  update(obj: T, options: WriteOptions & { subresource?: 'status' | 'scale' } = {}): Promise<T> {
    const name = obj.metadata.name ?? '';
    return this.transport.request<T>({
      method: 'PUT',
      path: this.itemPath(name, options.subresource),
      query: writeQuery(options),
      body: obj,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  updateStatus(obj: T, options: WriteOptions = {}): Promise<T> {
    return this.update(obj, { ...options, subresource: 'status' });
  }

  /** PATCH with one of the four patch types (a JSON patch is a list of operations). */
  patch(
    name: string,
    patch: unknown,
    type: PatchType = 'merge',
    options: WriteOptions & { force?: boolean; subresource?: 'status' | 'scale' } = {},
  ): Promise<T> {
    const query = writeQuery(options);
    if (type === 'apply' && options.force !== undefined) query.force = options.force;
    return this.transport.request<T>({
      method: 'PATCH',
      path: this.itemPath(name, options.subresource),
      query,
      body: patch,
      contentType: PatchType[type],
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /** Server-side apply of a full configuration (created when absent). */
  apply(
    obj: { metadata: { name?: string } } & Record<string, unknown>,
    options: Omit<WriteOptions, 'fieldManager'> & { fieldManager: string; force?: boolean },
  ): Promise<T> {
    const name = obj.metadata.name ?? '';
    return this.patch(name, obj, 'apply', options);
  }

  /** DELETE; resolves with the deleted object (or a Status, for kinds that answer one). */
  delete(name: string, options: DeleteOptions = {}): Promise<T | Status> {
    return this.transport.request<T | Status>({
      method: 'DELETE',
      path: this.itemPath(name),
      query: { dryRun: options.dryRun ? 'All' : undefined },
      body: deleteBody(options),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /** DELETE on the collection, with list selectors. */
  deleteCollection(
    options: DeleteOptions & Omit<ListOptions, 'signal'> = {},
  ): Promise<KubeList<T> | Status> {
    return this.transport.request<KubeList<T> | Status>({
      method: 'DELETE',
      path: this.itemPathless(),
      query: { ...listQuery(options), dryRun: options.dryRun ? 'All' : undefined },
      body: deleteBody(options),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /** Opens a watch stream (see watch.ts). */
  watch(options: WatchOptions = {}): Promise<WatchStream<T>> {
    return openWatch<T>(this.transport, this.path(), listQuery(options), {
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.idleTimeoutMs ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
    });
  }
}

function deleteBody(o: DeleteOptions): Record<string, unknown> {
  return {
    kind: 'DeleteOptions',
    apiVersion: 'v1',
    ...(o.propagationPolicy ? { propagationPolicy: o.propagationPolicy } : {}),
    ...(o.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: o.gracePeriodSeconds } : {}),
    ...(o.preconditions ? { preconditions: o.preconditions } : {}),
    ...(o.dryRun ? { dryRun: ['All'] } : {}),
  };
}
