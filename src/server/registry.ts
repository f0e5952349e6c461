/**
 * The member registry: who is in the cluster (ID, name, peer and client URLs, learner or
 * voter), this member's own identity, and the cluster ID, kept in the `member` sublevel of
 * the member's database so that a restart needs no cluster flags.
 *
 * Who changes it, and when:
 *   - bootstrap (new cluster): every member writes the same initial list, computed from
 *     --initial-cluster and the token;
 *   - join (existing cluster): the list fetched from a running member;
 *   - apply: a committed membership change, peer URL update or attribute publish updates it
 *     on every member in log order. Every update is idempotent (upsert, delete, set), so replaying entries
 *     after a crash (the registry is written before the store records the applied index)
 *     leaves the same state;
 *   - Raft snapshot install: replaced whole by the leader's copy.
 */
import { EtceteraError } from '../errors.js';
import type { RaftDb } from '../raft/storage/level-storage.js';
import { NodeId } from '../raft/types.js';
import type { MemberInfo } from './types.js';

export interface MemberRecord {
  id: NodeId;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
  /**
   * Set once the member's own publish entry was applied: it has started at least once.
   * (A member of a new cluster has its name from the flags, so the name does not say it.)
   */
  published?: boolean;
  /**
   * A learner added as a voter with --strict-reconfig-check=false: the leader promotes it
   * once it has started (published), so it never counts toward quorum before it runs.
   */
  promoteOnStart?: boolean;
}

/** The replicated part: the same on every member at the same applied index. */
export interface ClusterRecord {
  clusterId: string;
  members: MemberRecord[];
  /** IDs removed from the cluster; they may never come back (etcd keeps the same list). */
  removed: NodeId[];
}

/** The local part: who this member is. */
export interface SelfRecord {
  id: NodeId;
  name: string;
  token: string;
}

/** The context of a membership conf change entry (JSON in the entry). */
export interface ConfChangeContext {
  name?: string;
  peerURLs?: string[];
  /** On an AddLearner: promote it once it has started (see MemberRecord.promoteOnStart). */
  promoteOnStart?: boolean;
}

type JsonSub = {
  get(key: string): Promise<unknown>;
  put(key: string, value: unknown, options?: { sync?: boolean }): Promise<void>;
};

const CLUSTER_KEY = 'cluster';
const SELF_KEY = 'self';

export class MemberRegistry {
  private readonly members = new Map<NodeId, MemberRecord>();
  private readonly removed = new Set<NodeId>();

  private constructor(
    private readonly sub: JsonSub,
    public clusterId: string,
    readonly self: SelfRecord,
  ) {}

  /** Loads the registry, or undefined when this database has never been a member. */
  static async load(db: RaftDb): Promise<MemberRegistry | undefined> {
    const sub = subOf(db);
    const [self, cluster] = await Promise.all([sub.get(SELF_KEY), sub.get(CLUSTER_KEY)]);
    if (self === undefined || cluster === undefined) return undefined;
    const r = new MemberRegistry(sub, '', self as SelfRecord);
    r.replace(cluster as ClusterRecord);
    return r;
  }

  /** Records a first identity and cluster (bootstrap or join), durably. */
  static async create(
    db: RaftDb,
    self: SelfRecord,
    cluster: ClusterRecord,
  ): Promise<MemberRegistry> {
    const r = new MemberRegistry(subOf(db), cluster.clusterId, self);
    r.replace(cluster);
    await r.sub.put(SELF_KEY, self, { sync: true });
    await r.save();
    return r;
  }

  get(id: NodeId): MemberRecord | undefined {
    return this.members.get(id);
  }

  isRemoved(id: NodeId): boolean {
    return this.removed.has(id);
  }

  list(): MemberRecord[] {
    return [...this.members.values()].sort((a, b) => a.id - b.id);
  }

  info(): MemberInfo[] {
    return this.list().map(toInfo);
  }

  toRecord(): ClusterRecord {
    return {
      clusterId: this.clusterId,
      members: this.list().map((m) => ({ ...m })),
      removed: [...this.removed].sort((a, b) => a - b),
    };
  }

  /** Replaces the replicated part (snapshot install, join). Call `save` after. */
  replace(c: ClusterRecord): void {
    this.clusterId = c.clusterId;
    this.members.clear();
    for (const m of c.members) this.members.set(NodeId(m.id), { ...m, id: NodeId(m.id) });
    this.removed.clear();
    for (const id of c.removed) this.removed.add(NodeId(id));
  }

  /** An added member (voter or learner); a re-add of a known ID keeps its name and URLs. */
  upsert(id: NodeId, isLearner: boolean, ctx: ConfChangeContext): void {
    const old = this.members.get(id);
    this.members.set(id, {
      id,
      name: old?.name || ctx.name || '',
      peerURLs: ctx.peerURLs ?? old?.peerURLs ?? [],
      clientURLs: old?.clientURLs ?? [],
      isLearner,
      ...(old?.published === true ? { published: true } : {}),
      ...(isLearner && (ctx.promoteOnStart === true || old?.promoteOnStart === true)
        ? { promoteOnStart: true }
        : {}),
    });
  }

  remove(id: NodeId): void {
    this.members.delete(id);
    this.removed.add(id);
  }

  /** A member published its name and client URLs after starting (etcd's attribute update). */
  publish(id: NodeId, name: string, clientURLs: string[]): void {
    const m = this.members.get(id);
    if (m !== undefined) this.members.set(id, { ...m, name, clientURLs, published: true });
  }

  /**
   * A member's peer URLs changed (member update). Returns whether the member exists (an
   * update of a member removed meanwhile changes nothing, on every member alike).
   */
  updatePeerUrls(id: NodeId, peerURLs: string[]): boolean {
    const m = this.members.get(id);
    if (m === undefined) return false;
    this.members.set(id, { ...m, peerURLs: [...peerURLs] });
    return true;
  }

  /** Writes the replicated part, fsynced, before the store records the entry as applied. */
  save(): Promise<void> {
    return this.sub.put(CLUSTER_KEY, this.toRecord(), { sync: true });
  }
}

export function toInfo(m: MemberRecord): MemberInfo {
  return {
    id: String(m.id),
    name: m.name,
    peerURLs: [...m.peerURLs],
    clientURLs: [...m.clientURLs],
    isLearner: m.isLearner,
  };
}

function subOf(db: RaftDb): JsonSub {
  return db.sublevel('member', {
    keyEncoding: 'utf8',
    valueEncoding: 'json',
  }) as unknown as JsonSub;
}

export function encodeContext(ctx: ConfChangeContext): Uint8Array {
  return new Uint8Array(Buffer.from(JSON.stringify(ctx), 'utf8'));
}

export function decodeContext(data: Uint8Array | undefined): ConfChangeContext {
  if (data === undefined || data.length === 0) return {};
  try {
    const v = JSON.parse(Buffer.from(data).toString('utf8')) as unknown;
    return v !== null && typeof v === 'object' ? (v as ConfChangeContext) : {};
  } catch (cause) {
    throw new EtceteraError('ERR_CORRUPT', { detail: 'membership change context' }, { cause });
  }
}
