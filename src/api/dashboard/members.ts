/**
 * The dashboard's view of the cluster's members: this member's own figures from its status,
 * the others' from their `/dashboard/member` on the client URL the member list gives, fetched
 * by this member (a page may only talk to its own origin). A peer that does not answer within
 * PEER_TIMEOUT_MS, or has no client URL yet, is shown as unhealthy with the reason: never an
 * error for the whole view. One view is shared by every request within VIEW_TTL_MS, so any
 * number of open dashboards costs one status call per member per second.
 */
import type { MemberApi } from '../../server/types.js';

export const PEER_TIMEOUT_MS = 800;
const VIEW_TTL_MS = 900;

/** One member as the dashboard shows it. */
export interface MemberView {
  id: string;
  name: string;
  clientURL: string | null;
  /** This is the member serving the dashboard. */
  self: boolean;
  /** This member is the leader (as the member serving the dashboard knows it). */
  leader: boolean;
  /** The figures below are from the member itself; false when it did not answer. */
  reachable: boolean;
  healthy: boolean;
  /** Why it is not healthy; '' when it is. */
  reason: string;
  term: number | null;
  appliedIndex: number | null;
  commitIndex: number | null;
  revision: number | null;
  dbSize: number | null;
  isLearner: boolean;
}

/** What `/dashboard/member` answers: a member's own figures. */
export interface OwnFigures {
  id: string;
  leader: string;
  term: number;
  appliedIndex: number;
  commitIndex: number;
  revision: number;
  dbSize: number;
  healthy: boolean;
  reason: string;
}

export async function ownFigures(member: MemberApi): Promise<OwnFigures> {
  const s = await member.status();
  const h = member.health();
  const reason = !h.health ? h.reason : (s.errors[0] ?? '');
  return {
    id: s.header.memberId,
    leader: s.leader,
    term: s.raftTerm,
    appliedIndex: s.raftAppliedIndex,
    commitIndex: s.raftIndex,
    revision: s.header.revision,
    dbSize: s.dbSize,
    healthy: reason === '',
    reason,
  };
}

function isOwnFigures(v: unknown): v is OwnFigures {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return (
    typeof o.id === 'string' &&
    typeof o.leader === 'string' &&
    typeof o.healthy === 'boolean' &&
    typeof o.reason === 'string' &&
    ['term', 'appliedIndex', 'commitIndex', 'revision', 'dbSize'].every(
      (k) => typeof o[k] === 'number',
    )
  );
}

async function peerFigures(url: string): Promise<OwnFigures> {
  const res = await fetch(new URL('/dashboard/member', url), {
    signal: AbortSignal.timeout(PEER_TIMEOUT_MS),
    headers: { accept: 'application/json' },
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  const body: unknown = await res.json();
  if (!isOwnFigures(body)) throw new Error('an answer that is not a member summary');
  return body;
}

function why(e: unknown): string {
  if (e instanceof Error && e.name === 'TimeoutError') return `no answer in ${PEER_TIMEOUT_MS} ms`;
  const cause = e instanceof Error ? (e.cause as { code?: string } | undefined) : undefined;
  return cause?.code ?? (e instanceof Error ? e.message : String(e));
}

export class MembersView {
  private view: { at: number; members: Promise<MemberView[]> } | undefined;

  constructor(private readonly member: MemberApi) {}

  /** The members, by name; a cached view when one was made within VIEW_TTL_MS. */
  members(): Promise<MemberView[]> {
    const now = Date.now();
    if (this.view === undefined || now - this.view.at > VIEW_TTL_MS) {
      this.view = { at: now, members: this.build() };
      // A failed build must not be served again.
      this.view.members.catch(() => {
        this.view = undefined;
      });
    }
    return this.view.members;
  }

  private async build(): Promise<MemberView[]> {
    const [{ members }, own] = await Promise.all([
      this.member.memberList(),
      ownFigures(this.member),
    ]);
    const views = await Promise.all(
      members.map(async (m): Promise<MemberView> => {
        const self = m.id === own.id;
        const clientURL = m.clientURLs[0] ?? null;
        const base = {
          id: m.id,
          name: m.name === '' ? `(unstarted ${m.id})` : m.name,
          clientURL,
          self,
          leader: m.id === own.leader,
          isLearner: m.isLearner,
        };
        let f: OwnFigures;
        try {
          if (self) f = own;
          else if (clientURL === null) throw new Error('no client URL published yet');
          else f = await peerFigures(clientURL);
        } catch (e) {
          return {
            ...base,
            reachable: false,
            healthy: false,
            reason: `unreachable: ${why(e)}`,
            term: null,
            appliedIndex: null,
            commitIndex: null,
            revision: null,
            dbSize: null,
          };
        }
        return {
          ...base,
          reachable: true,
          healthy: f.healthy,
          reason: f.reason,
          term: f.term,
          appliedIndex: f.appliedIndex,
          commitIndex: f.commitIndex,
          revision: f.revision,
          dbSize: f.dbSize,
        };
      }),
    );
    return views.sort((a, b) => a.name.localeCompare(b.name));
  }
}
