/**
 * The URL prefixes of etcd's JSON API. etcd 3.4 serves its gateway under `/v3/` and, for
 * clients written against 3.3, under `/v3beta/` too (it answers 404 for `/v3alpha/`);
 * routes are matched on the `/v3/` form.
 */

const ALIASES = ['/v3beta/'] as const;

/** The `/v3/` form of an etcd API path; other paths unchanged. */
export function canonicalEtcdPath(path: string): string {
  for (const a of ALIASES) if (path.startsWith(a)) return `/v3/${path.slice(a.length)}`;
  return path;
}
