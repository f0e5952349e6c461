/**
 * The entry point of the Kubernetes client: one transport (base URL, token, keep-alive)
 * shared by resource clients and informers.
 *
 *   const kube = new KubeClient({ baseUrl: 'http://127.0.0.1:2379' });
 *   const pods = kube.resource(Resources.pods, 'default');
 *   await pods.create({ metadata: { name: 'web' }, spec: { containers: [...] } });
 *   const informer = kube.informer(kube.resource(Resources.pods)).start();
 *   await informer.waitForSync();
 */
import { KubeTransport, type KubeTransportOptions } from './http.js';
import { Informer, type InformerOptions } from './informer.js';
import { ResourceClient } from './resource-client.js';
import type { KubeObject, ResourceRef } from './types.js';

export type KubeClientOptions = KubeTransportOptions;

export class KubeClient {
  readonly transport: KubeTransport;

  constructor(options: KubeClientOptions) {
    this.transport = new KubeTransport(options);
  }

  /** A client for a resource, in one namespace or (namespace undefined) across all. */
  resource<T extends KubeObject = KubeObject>(
    ref: ResourceRef,
    namespace?: string,
  ): ResourceClient<T> {
    return new ResourceClient<T>(this.transport, ref, namespace);
  }

  /** An informer over a resource client (not started). */
  informer<T extends KubeObject>(
    client: ResourceClient<T>,
    options: InformerOptions<T> = {},
  ): Informer<T> {
    return new Informer<T>(client, options);
  }

  /** GET of any path answered with JSON (discovery documents, /version). */
  raw<T = unknown>(path: string): Promise<T> {
    return this.transport.request<T>({ method: 'GET', path });
  }
}
