/**
 * /version and discovery in both forms:
 *
 *   aggregated: APIGroupDiscoveryList (apidiscovery.k8s.io/v2 or v2beta1) at /api and /apis,
 *     answered only when the Accept header asks for it, with the SAME media type parameters
 *     in Content-Type (kubectl otherwise reads the body as a legacy document and finds nothing);
 *   legacy: APIVersions (/api), APIGroupList (/apis), APIGroup (/apis/G), APIResourceList
 *     (/api/v1, /apis/G/V); client-node's generic API only reads these.
 *
 * Documents are rebuilt when the registry's generation moves (a CRD came or went).
 */
import type { ServerResponse } from 'node:http';
import type { KindRegistry } from '../../k8s/registry.js';
import { pathNotFound } from '../../k8s/status.js';
import type { ResourceInfo } from '../../k8s/types.js';
import type { Kube } from './context.js';
import { sendText } from './respond.js';

const AGGREGATED = [
  { v: 'v2', type: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' },
  {
    v: 'v2beta1',
    type: 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList',
  },
] as const;

/** The aggregated version the Accept header asks for first, if any. */
export function aggregatedVersion(accept: string | undefined): 'v2' | 'v2beta1' | undefined {
  for (const part of (accept ?? '').split(',')) {
    const params = new Map<string, string>();
    const [type, ...rest] = part.split(';').map((p) => p.trim());
    for (const p of rest) {
      const [k, v] = p.split('=');
      if (k && v) params.set(k.trim(), v.trim());
    }
    if (type === 'application/json' && params.get('as') === 'APIGroupDiscoveryList') {
      const v = params.get('v');
      if (params.get('g') === 'apidiscovery.k8s.io' && (v === 'v2' || v === 'v2beta1')) return v;
    }
    if ((type === 'application/json' && params.size === 0) || type === '*/*') return undefined;
  }
  return undefined;
}

export function versionInfo(kube: Kube): Record<string, string> {
  const git = kube.options.gitVersion;
  const m = /^v(\d+)\.(\d+)/.exec(git);
  return {
    major: m?.[1] ?? '1',
    minor: m?.[2] ?? '32',
    gitVersion: git,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2025-01-01T00:00:00Z',
    goVersion: 'go1.23.4',
    compiler: 'gc',
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
    ...kube.options.versionExtra,
  };
}

function subresourceVerbs(): string[] {
  return ['get', 'patch', 'update'];
}

function aggregatedResource(i: ResourceInfo): Record<string, unknown> {
  const kind = { group: i.group, version: i.version, kind: i.kind };
  const subresources: Record<string, unknown>[] = [];
  if (i.statusSubresource) {
    subresources.push({ subresource: 'status', responseKind: kind, verbs: subresourceVerbs() });
  }
  if (i.scaleSubresource) {
    subresources.push({
      subresource: 'scale',
      responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' },
      verbs: subresourceVerbs(),
    });
  }
  return {
    resource: i.resource,
    responseKind: kind,
    scope: i.scope,
    singularResource: i.singular,
    verbs: [...i.verbs],
    ...(i.shortNames.length > 0 ? { shortNames: [...i.shortNames] } : {}),
    ...(i.categories.length > 0 ? { categories: [...i.categories] } : {}),
    ...(subresources.length > 0 ? { subresources } : {}),
  };
}

function aggregatedList(registry: KindRegistry, core: boolean, v: 'v2' | 'v2beta1'): unknown {
  const items = registry
    .groups()
    .filter((g) => (g.group === '') === core)
    .map((g) => ({
      metadata: { name: g.group },
      versions: g.versions.map((version) => ({
        version,
        resources: registry.resources(g.group, version).map(aggregatedResource),
        freshness: 'Current',
      })),
    }));
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: `apidiscovery.k8s.io/${v}`,
    metadata: {},
    items,
  };
}

function legacyResources(i: ResourceInfo): Record<string, unknown>[] {
  const main = {
    name: i.resource,
    singularName: i.singular,
    namespaced: i.scope === 'Namespaced',
    kind: i.kind,
    verbs: [...i.verbs],
    ...(i.shortNames.length > 0 ? { shortNames: [...i.shortNames] } : {}),
    ...(i.categories.length > 0 ? { categories: [...i.categories] } : {}),
  };
  const out: Record<string, unknown>[] = [main];
  const sub = { singularName: '', namespaced: i.scope === 'Namespaced', verbs: subresourceVerbs() };
  if (i.statusSubresource) out.push({ name: `${i.resource}/status`, kind: i.kind, ...sub });
  if (i.scaleSubresource) {
    out.push({
      name: `${i.resource}/scale`,
      group: 'autoscaling',
      version: 'v1',
      kind: 'Scale',
      ...sub,
    });
  }
  return out;
}

function groupDoc(registry: KindRegistry, group: string): Record<string, unknown> | undefined {
  const g = registry.groups().find((x) => x.group === group);
  if (!g) return undefined;
  const versions = g.versions.map((version) => ({ groupVersion: `${group}/${version}`, version }));
  return { name: group, versions, preferredVersion: versions[0] };
}

/** Serves /api, /apis, /apis/G, /api/V and /apis/G/V. */
export function sendDiscovery(
  kube: Kube,
  res: ServerResponse,
  accept: string | undefined,
  route:
    | { type: 'discoveryRoot'; core: boolean }
    | { type: 'group'; group: string }
    | { type: 'groupVersion'; group: string; version: string },
): void {
  const { registry } = kube;
  if (route.type === 'discoveryRoot') {
    const v = aggregatedVersion(accept);
    if (v) {
      const type = AGGREGATED.find((a) => a.v === v)?.type as string;
      sendText(res, 200, JSON.stringify(aggregatedList(registry, route.core, v)), type);
      return;
    }
    if (route.core) {
      const body = {
        kind: 'APIVersions',
        versions: registry.groups().find((g) => g.group === '')?.versions ?? ['v1'],
        serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }],
      };
      sendText(res, 200, JSON.stringify(body));
      return;
    }
    const groups = registry
      .groups()
      .filter((g) => g.group !== '')
      .map((g) => groupDoc(registry, g.group));
    sendText(res, 200, JSON.stringify({ kind: 'APIGroupList', apiVersion: 'v1', groups }));
    return;
  }
  if (route.type === 'group') {
    const doc = groupDoc(registry, route.group);
    if (!doc || route.group === '') throw pathNotFound();
    sendText(res, 200, JSON.stringify({ kind: 'APIGroup', apiVersion: 'v1', ...doc }));
    return;
  }
  const infos = registry.resources(route.group, route.version);
  if (infos.length === 0) throw pathNotFound();
  const groupVersion = route.group === '' ? route.version : `${route.group}/${route.version}`;
  const body = {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion,
    resources: infos.flatMap(legacyResources),
  };
  sendText(res, 200, JSON.stringify(body));
}
