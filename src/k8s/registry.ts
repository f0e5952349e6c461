/**
 * The registry of served kinds: the built-ins, plus one entry per served version of every
 * established CustomResourceDefinition. Discovery, OpenAPI and routing read it; CRD writes
 * (from any member, seen through the event stream) change it.
 *
 * `generation` grows on every change, so documents derived from the registry (discovery,
 * OpenAPI and its hash) are rebuilt only when it moved.
 */
import { BUILTIN_KINDS } from './builtins.js';
import type { ResourceInfo } from './types.js';

/** Kubernetes' version order: GA > beta > alpha, higher numbers first, then others by name. */
export function compareKubeVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return undefined;
    const level = m[2] === undefined ? 3 : m[2] === 'beta' ? 2 : 1;
    return { major: Number(m[1]), level, minor: m[3] === undefined ? 0 : Number(m[3]) };
  };
  const pa = parse(a);
  const pb = parse(b);
  if (pa && pb) {
    if (pa.level !== pb.level) return pb.level - pa.level;
    if (pa.major !== pb.major) return pb.major - pa.major;
    return pb.minor - pa.minor;
  }
  if (pa) return -1;
  if (pb) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

export interface GroupVersions {
  group: string;
  /** Preferred (first) to least preferred. */
  versions: string[];
}

const gvKey = (group: string, version: string) => `${group}/${version}`;

export class KindRegistry {
  private readonly builtins = new Map<string, ResourceInfo>();
  /** CRD name → the infos of its served versions (and the revision they come from). */
  private readonly crds = new Map<string, { revision: number; infos: ResourceInfo[] }>();
  private index = new Map<string, ResourceInfo>();
  private listeners = new Set<() => void>();
  private gen = 1;

  constructor(builtins: readonly ResourceInfo[] = BUILTIN_KINDS) {
    for (const info of builtins) this.builtins.set(this.key(info), info);
    this.rebuild();
  }

  private key(i: { group: string; version: string; resource: string }): string {
    return `${i.group}/${i.version}/${i.resource}`;
  }

  private rebuild(): void {
    const next = new Map(this.builtins);
    for (const { infos } of this.crds.values()) {
      for (const info of infos) if (!next.has(this.key(info))) next.set(this.key(info), info);
    }
    this.index = next;
    this.gen++;
    for (const l of this.listeners) l();
  }

  /** Grows on every change of the served set. */
  get generation(): number {
    return this.gen;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get(group: string, version: string, resource: string): ResourceInfo | undefined {
    return this.index.get(`${group}/${version}/${resource}`);
  }

  /** Every served resource, built-ins first, in a stable order. */
  all(): ResourceInfo[] {
    return [...this.index.values()];
  }

  /** Whether a built-in serves this group/resource (CRDs may not shadow one). */
  isBuiltin(group: string, resource: string): boolean {
    for (const b of this.builtins.values()) {
      if (b.group === group && b.resource === resource) return true;
    }
    return false;
  }

  /**
   * Installs (or replaces) the served versions of one CRD. `revision` is the CRD object's
   * mod revision: an older one than what is installed is ignored, so the same change may
   * arrive from the write path and from the event stream in either order.
   */
  setCrd(name: string, revision: number, infos: ResourceInfo[]): void {
    const cur = this.crds.get(name);
    if (cur && cur.revision >= revision) return;
    this.crds.set(name, { revision, infos });
    this.rebuild();
  }

  removeCrd(name: string, revision: number): void {
    const cur = this.crds.get(name);
    if (!cur || cur.revision > revision) return;
    this.crds.delete(name);
    this.rebuild();
  }

  crdRevision(name: string): number | undefined {
    return this.crds.get(name)?.revision;
  }

  /** The served versions of one CRD (its infos, in spec order). */
  crdInfos(name: string): ResourceInfo[] {
    return this.crds.get(name)?.infos ?? [];
  }

  /** Groups with their versions, core first, then built-in groups, then CRD groups by name. */
  groups(): GroupVersions[] {
    const order: string[] = [];
    const versions = new Map<string, Set<string>>();
    const builtinGroups = new Set([...this.builtins.values()].map((b) => b.group));
    for (const info of this.index.values()) {
      if (!versions.has(info.group)) {
        versions.set(info.group, new Set());
        order.push(info.group);
      }
      versions.get(info.group)?.add(info.version);
    }
    const builtinOrder = order.filter((g) => builtinGroups.has(g));
    const crdOrder = order.filter((g) => !builtinGroups.has(g)).sort();
    return [...builtinOrder, ...crdOrder].map((group) => ({
      group,
      versions: [...(versions.get(group) ?? [])].sort(compareKubeVersions),
    }));
  }

  /** The resources of one group-version, in registration order. */
  resources(group: string, version: string): ResourceInfo[] {
    return [...this.index.values()].filter(
      (i) => gvKey(i.group, i.version) === gvKey(group, version),
    );
  }

  /** Every namespaced resource once per group/resource (all versions share storage). */
  namespacedStorage(): ResourceInfo[] {
    const seen = new Set<string>();
    const out: ResourceInfo[] = [];
    for (const info of this.index.values()) {
      const k = `${info.group}/${info.resource}`;
      if (info.scope !== 'Namespaced' || seen.has(k)) continue;
      seen.add(k);
      out.push(info);
    }
    return out;
  }

  /** The info for a resource given by plural, singular or short name (any version). */
  findByName(group: string, name: string): ResourceInfo | undefined {
    for (const info of this.index.values()) {
      if (info.group !== group) continue;
      if (info.resource === name || info.singular === name || info.shortNames.includes(name)) {
        return info;
      }
    }
    return undefined;
  }
}
