/**
 * One informer per resource shared by every controller of a process (client-go's
 * SharedInformerFactory): `for(ref)` makes it on first use, `start()` starts those made so
 * far, `waitForSync()` waits for all of them. Indexes are added with `addIndex`, before or
 * after start.
 */
import type { IndexFunc } from './cache.js';
import type { KubeClient } from './client.js';
import type { Informer, InformerOptions } from './informer.js';
import { apiVersionOf, type KubeObject, type ResourceRef } from './types.js';

export class SharedInformers {
  private readonly informers = new Map<string, Informer<KubeObject>>();
  private started = false;

  constructor(
    readonly kube: KubeClient,
    private readonly defaults: Omit<InformerOptions<KubeObject>, 'indexers'> = {},
  ) {}

  for<T extends KubeObject = KubeObject>(ref: ResourceRef): Informer<T> {
    const id = `${apiVersionOf(ref)}/${ref.resource}`;
    let inf = this.informers.get(id);
    if (!inf) {
      inf = this.kube.informer(this.kube.resource(ref), this.defaults);
      this.informers.set(id, inf);
      if (this.started) inf.start();
    }
    return inf as unknown as Informer<T>;
  }

  /** Adds an index to the resource's cache unless one of that name is there. */
  addIndex<T extends KubeObject>(ref: ResourceRef, name: string, fn: IndexFunc<T>): void {
    const cache = this.for<T>(ref).cache;
    try {
      cache.addIndex(name, fn);
    } catch {
      // Already there: indexes are shared by name.
    }
  }

  start(): void {
    this.started = true;
    for (const inf of this.informers.values()) inf.start();
  }

  async waitForSync(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.waitForSync()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }
}
