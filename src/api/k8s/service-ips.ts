/**
 * Service clusterIP allocation on the write path, as kube-apiserver's Service registry does
 * it on create, and on an update that turns an ExternalName Service into one that needs an
 * address (src/k8s/service-ips.ts has the rules and texts).
 *
 * What is taken is derived from the stored Services, so nothing is kept beside them: a
 * restart, a delete by any path (a namespace emptied, a finalizer removed) frees the address
 * with the Service. A create reads every Service at a revision R, picks (or checks) the
 * address, and its swap also compares `mod_revision < R + 1` over the whole Services range:
 * if any Service was written meanwhile, on this member or another, the swap fails and the
 * create reads again, so two creates never get one address. In one process the creates of
 * Services run one at a time (`serialCreates`), so they do not lose swaps to each other.
 */
import { bytesKey, keyBytes, prefixEndBytes, resourcePrefix } from '../../k8s/keys.js';
import {
  type ClusterIpNeed,
  checkRequested,
  clusterIpNeed,
  heldClusterIp,
  keepClusterIp,
  pickFree,
  setClusterIp,
} from '../../k8s/service-ips.js';
import type { KubeObject } from '../../k8s/types.js';
import type { Compare } from '../../store/types.js';
import { parseCidr } from '../../wire/cidr.js';
import type { Kube } from './context.js';
import type { KindHooks } from './write.js';

export const SERVICES_REF = '/services';
const PREFIX = resourcePrefix({ group: '', resource: 'services' });

/** The clusterIPs held by stored Services, and the revision they were read at. */
async function takenAddresses(kube: Kube): Promise<{ taken: Set<string>; revision: number }> {
  const taken = new Set<string>();
  const end = prefixEndBytes(PREFIX);
  let after: string | undefined;
  let revision = 0;
  for (;;) {
    const page = await kube.storage.range(PREFIX, after, end, revision, 1000);
    revision = page.revision;
    for (const s of page.items) {
      const ip = heldClusterIp(s.obj);
      if (ip !== undefined) taken.add(ip);
    }
    const last = page.items[page.items.length - 1];
    if (!page.more || !last) break;
    after = bytesKey(last.kv.key);
  }
  return { taken, revision };
}

/**
 * Gives `obj` the address `need` asks for (checked, or a free one) from the Services stored
 * at a revision R; the compare that makes the write fail if any Service changed since R.
 */
async function allocate(
  kube: Kube,
  obj: KubeObject,
  need: Exclude<ClusterIpNeed, { kind: 'none' }>,
): Promise<Compare[]> {
  const range = parseCidr(kube.options.serviceClusterIpRange);
  const { taken, revision } = await takenAddresses(kube);
  if (need.kind === 'given') checkRequested(obj, range, need.ip, taken);
  setClusterIp(obj, need.kind === 'given' ? need.ip : pickFree(range, taken));
  return [
    {
      key: keyBytes(PREFIX),
      rangeEnd: prefixEndBytes(PREFIX),
      target: 'MOD',
      result: 'LESS',
      modRevision: revision + 1,
    },
  ];
}

export const serviceHooks: KindHooks = {
  serialCreates: true,
  beforeCreate(kube: Kube, obj: KubeObject): () => Promise<Compare[]> {
    // What the request asked for, before any attempt sets an address.
    const need = clusterIpNeed(obj);
    return async () => (need.kind === 'none' ? [] : allocate(kube, obj, need));
  },
  prepare(_kube, obj, old) {
    if (old) keepClusterIp(obj, old);
  },
  // A Service that held no address (ExternalName) and needs one now (turned ClusterIP,
  // NodePort or LoadBalancer) gets it as on create. One that held one kept it in prepare.
  async beforeUpdate(kube, next, old) {
    if (heldClusterIp(old) !== undefined) return [];
    const need = clusterIpNeed(next);
    return need.kind === 'none' ? [] : allocate(kube, next, need);
  },
};
