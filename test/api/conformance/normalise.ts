/**
 * Normalising answers so etcetera's and etcd's can be compared: what legitimately differs
 * between two servers (cluster and member IDs, terms, generated lease and member IDs, URLs,
 * sizes, a TTL that ticked) is replaced by placeholders; everything else must be equal.
 */
export type Normaliser =
  | 'decode'
  | 'leaseId'
  | 'ttl'
  | 'leaseList'
  | 'members'
  | 'status'
  | 'statusOnly'
  | 'etcdVersion';

export interface Answer {
  status: number;
  body: unknown;
}

type Obj = Record<string, unknown>;

const IDENTITY_FIELDS = new Set(['cluster_id', 'member_id', 'raft_term']);

/** Drops the fields that identify a cluster, a member or a term, at any depth. */
function stripIdentity(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripIdentity);
  if (v === null || typeof v !== 'object') return v;
  const out: Obj = {};
  for (const [k, x] of Object.entries(v as Obj))
    if (!IDENTITY_FIELDS.has(k)) out[k] = stripIdentity(x);
  return out;
}

const isSmallId = (id: unknown) =>
  typeof id === 'string' && /^\d+$/.test(id) && Number(id) <= 1_000_000;

function member(m: Obj): Obj {
  const out: Obj = { ...m, ID: '<id>' };
  if (m.name !== undefined) out.name = '<name>';
  for (const f of ['peerURLs', 'clientURLs'] as const) {
    const urls = m[f];
    if (Array.isArray(urls)) out[f] = urls.map(() => '<url>');
  }
  return out;
}

const STEPS: Record<Normaliser, (a: Answer) => Answer> = {
  decode(a) {
    const body = a.body as Obj | null;
    if (a.status === 200 || body === null || typeof body !== 'object') return a;
    const message = String(body.message ?? '');
    if (message.startsWith('etcdserver:')) return a;
    return {
      status: a.status,
      body: { ...body, error: '<decode error>', message: '<decode error>' },
    };
  },
  leaseId(a) {
    const body = a.body as Obj;
    return body.ID === undefined ? a : { ...a, body: { ...body, ID: '<id>' } };
  },
  ttl(a) {
    const body = a.body as Obj;
    const ttl = Number(body.TTL);
    const granted = Number(body.grantedTTL);
    return ttl >= granted - 3 && ttl <= granted ? { ...a, body: { ...body, TTL: '<ttl>' } } : a;
  },
  leaseList(a) {
    const body = a.body as Obj;
    const ids = ((body.leases as Obj[] | undefined) ?? []).map((l) =>
      isSmallId(l.ID) ? l.ID : '<id>',
    );
    return { ...a, body: { ...body, leases: ids.sort().map((ID) => ({ ID })) } };
  },
  members(a) {
    const body = a.body as Obj;
    const out: Obj = { ...body };
    if (body.member) out.member = member(body.member as Obj);
    // Member order follows random IDs; after normalising, order by content.
    if (Array.isArray(body.members)) {
      out.members = (body.members as Obj[])
        .map(member)
        .sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)));
    }
    return { ...a, body: out };
  },
  status(a) {
    const body = { ...(a.body as Obj) };
    for (const f of ['dbSize', 'dbSizeInUse', 'raftIndex', 'raftAppliedIndex', 'raftTerm']) {
      if (body[f] !== undefined) body[f] = '<n>';
    }
    if (body.leader !== undefined) body.leader = '<id>';
    return { ...a, body };
  },
  statusOnly(a) {
    return { status: a.status, body: null };
  },
  /**
   * etcd 3.4's patch level: etcetera reports a later 3.4 patch than the recorded etcd on
   * purpose (kube-apiserver enables its consistent reads from 3.4.31 on).
   */
  etcdVersion(a) {
    const body = { ...(a.body as Obj) };
    for (const f of ['version', 'etcdserver']) {
      if (typeof body[f] === 'string')
        body[f] = String(body[f]).replace(/^3\.4\.\d+$/, '3.4.<patch>');
    }
    return { ...a, body };
  },
};

export function normalise(a: Answer, steps: readonly Normaliser[] = []): Answer {
  let out: Answer = { status: a.status, body: stripIdentity(a.body) };
  for (const s of steps) out = STEPS[s](out);
  return out;
}

/** Parses an answer's text: JSON, or the first line of a gateway stream, or raw text. */
export function parseAnswer(status: number, text: string): Answer {
  const first = text.trim().split('\n')[0] ?? '';
  try {
    return { status, body: JSON.parse(first) };
  } catch {
    return { status, body: { text: text.trim() } };
  }
}
