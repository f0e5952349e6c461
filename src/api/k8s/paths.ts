/**
 * The URL paths of the Kubernetes face, parsed into what they address.
 * Parsing is purely syntactic; whether the resource exists is the registry's business.
 */

export type Route =
  | { type: 'version' }
  /** /api (core versions) or /apis (named groups): discovery roots. */
  | { type: 'discoveryRoot'; core: boolean }
  /** /apis/{group}: one APIGroup. */
  | { type: 'group'; group: string }
  /** /api/v1, /apis/{group}/{version}: an APIResourceList. */
  | { type: 'groupVersion'; group: string; version: string }
  | { type: 'openapiRoot' }
  | { type: 'openapiGroupVersion'; group: string; version: string }
  | { type: 'openapiV2' }
  | ({ type: 'resource' } & ResourcePath);

export interface ResourcePath {
  group: string;
  version: string;
  resource: string;
  /** The namespace from a /namespaces/{ns}/... path; undefined for cluster-wide paths. */
  namespace?: string;
  name?: string;
  subresource?: string;
}

/** True when the face serves this path (so other faces can leave it alone). */
export function isKubernetesPath(path: string): boolean {
  return (
    path === '/version' ||
    path === '/version/' ||
    path === '/api' ||
    path.startsWith('/api/') ||
    path === '/apis' ||
    path.startsWith('/apis/') ||
    path === '/openapi' ||
    path.startsWith('/openapi/')
  );
}

function segmentsOf(path: string): string[] | undefined {
  const trimmed = path.replace(/\/+$/, '');
  const raw = trimmed.split('/').slice(1);
  const out: string[] = [];
  for (const s of raw) {
    if (s === '') return undefined;
    let d: string;
    try {
      d = decodeURIComponent(s);
    } catch {
      return undefined;
    }
    out.push(d);
  }
  return out;
}

/** Parses the rest of a resource path after /api/v1 or /apis/{g}/{v}. */
function resourceRoute(group: string, version: string, rest: string[]): Route | undefined {
  const base = { type: 'resource' as const, group, version };
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const ns = rest[1] as string;
    // /api/v1/namespaces/{name}/status|finalize address the Namespace itself.
    if (group === '' && rest.length === 3 && (rest[2] === 'status' || rest[2] === 'finalize')) {
      return { ...base, resource: 'namespaces', name: ns, subresource: rest[2] };
    }
    const [resource, name, subresource, ...extra] = rest.slice(2);
    if (extra.length > 0 || resource === undefined) return undefined;
    return {
      ...base,
      namespace: ns,
      resource,
      ...(name !== undefined ? { name } : {}),
      ...(subresource !== undefined ? { subresource } : {}),
    };
  }
  const [resource, name, subresource, ...extra] = rest;
  if (extra.length > 0 || resource === undefined) return undefined;
  return {
    ...base,
    resource,
    ...(name !== undefined ? { name } : {}),
    ...(subresource !== undefined ? { subresource } : {}),
  };
}

export function parsePath(path: string): Route | undefined {
  const s = segmentsOf(path);
  if (!s) return undefined;
  const [a, b, c, ...rest] = s;
  if (a === 'version' && s.length === 1) return { type: 'version' };
  if (a === 'api') {
    if (b === undefined) return { type: 'discoveryRoot', core: true };
    if (c === undefined) return { type: 'groupVersion', group: '', version: b };
    return resourceRoute('', b, [c, ...rest]);
  }
  if (a === 'apis') {
    if (b === undefined) return { type: 'discoveryRoot', core: false };
    if (c === undefined) return { type: 'group', group: b };
    if (rest.length === 0) return { type: 'groupVersion', group: b, version: c };
    return resourceRoute(b, c, rest);
  }
  if (a === 'openapi') {
    if (b === 'v2' && c === undefined) return { type: 'openapiV2' };
    if (b !== 'v3') return undefined;
    if (c === undefined) return { type: 'openapiRoot' };
    if (c === 'api' && rest.length === 1) {
      return { type: 'openapiGroupVersion', group: '', version: rest[0] as string };
    }
    if (c === 'apis' && rest.length === 2) {
      return { type: 'openapiGroupVersion', group: rest[0] as string, version: rest[1] as string };
    }
  }
  return undefined;
}
