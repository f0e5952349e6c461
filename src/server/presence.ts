/**
 * A member's standing in its cluster, kept up by two background duties:
 *
 *   publish   announce this member's name and client URLs through Raft (etcd's publish)
 *             until the registry shows them; retried on a timer and on leader changes.
 *             `onPublished` fires once it is applied here: only then does the member
 *             answer clients, so no client sees a member list without its own URLs.
 *   promote   on the leader, every election timeout: a learner added as a voter with the
 *             strict reconfiguration check off is promoted once it has started.
 *   removal   a member removed from the cluster may never apply its own removal (the leader
 *             stops replicating to it once the change commits). So when it has had no leader
 *             for two election timeouts, it asks its peers for the registry; if its ID is in
 *             the removed list, it was removed, and says so (the member then stops).
 */
import type { NodeId } from '../raft/types.js';
import type { Logger } from './logger.js';
import { fetchCluster } from './peer-http.js';
import type { MemberRegistry } from './registry.js';
import type { DialTls } from './tls.js';

export interface PresenceDeps {
  /** TLS for https:// peers (the member's peer certificate). */
  peerTls?: DialTls;
  selfId: NodeId;
  name: string;
  registry: MemberRegistry;
  logger: Logger;
  electionMs: number;
  hasLeader(): boolean;
  advertisedClientUrls(): string[];
  /** Proposes the attribute entry; resolves when applied here. */
  proposeAttributes(body: Uint8Array): Promise<void>;
  onRemoved(): void;
  /** Called once, when this member's attributes are in the applied registry. */
  onPublished(): void;
  isLeader(): boolean;
  /** On the leader: promote a started `promoteOnStart` learner, if any (membership.ts). */
  promoteStarted(): Promise<boolean>;
}

export class Presence {
  private publishTimer: NodeJS.Timeout | undefined;
  private watchTimer: NodeJS.Timeout | undefined;
  private published = false;
  private leaderlessSince: number | undefined;
  private checking = false;
  private stopped = false;

  constructor(private readonly d: PresenceDeps) {}

  start(): void {
    this.schedulePublish(0);
    this.watchTimer = setInterval(() => {
      void this.checkRemoval();
      void this.promote();
    }, this.d.electionMs);
    this.watchTimer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.publishTimer !== undefined) clearTimeout(this.publishTimer);
    if (this.watchTimer !== undefined) clearInterval(this.watchTimer);
  }

  /** Called on every leader change. */
  leaderChanged(hasLeader: boolean): void {
    this.leaderlessSince = hasLeader ? undefined : (this.leaderlessSince ?? Date.now());
    if (hasLeader && !this.published && this.watchTimer !== undefined) this.schedulePublish(0);
  }

  private schedulePublish(delayMs: number): void {
    if (this.publishTimer !== undefined || this.stopped) return;
    this.publishTimer = setTimeout(() => {
      this.publishTimer = undefined;
      void this.publish().then(
        (done) => (done ? undefined : this.schedulePublish(500)),
        () => this.schedulePublish(500),
      );
    }, delayMs);
    this.publishTimer.unref();
  }

  private async publish(): Promise<boolean> {
    const clientURLs = this.d.advertisedClientUrls();
    const mine = this.d.registry.get(this.d.selfId);
    if (mine === undefined) return this.markPublished(); // removed: nothing to announce
    if (
      mine.published === true &&
      mine.name === this.d.name &&
      mine.clientURLs.join(',') === clientURLs.join(',')
    )
      return this.markPublished();
    if (!this.d.hasLeader()) return false;
    const body = { id: this.d.selfId, name: this.d.name, clientURLs };
    await this.d.proposeAttributes(new Uint8Array(Buffer.from(JSON.stringify(body))));
    this.d.logger.info({ clientURLs }, 'published member attributes');
    return this.markPublished();
  }

  private markPublished(): true {
    if (!this.published) {
      this.published = true;
      if (!this.stopped) this.d.onPublished();
    }
    return true;
  }

  private promoting = false;

  private async promote(): Promise<void> {
    if (this.promoting || this.stopped || !this.d.isLeader()) return;
    this.promoting = true;
    try {
      if (await this.d.promoteStarted()) this.d.logger.info('promoted a started learner');
    } catch (e) {
      this.d.logger.warn({ err: String(e) }, 'promoting a started learner failed; will retry');
    } finally {
      this.promoting = false;
    }
  }

  private async checkRemoval(): Promise<void> {
    const since = this.leaderlessSince;
    if (this.checking || since === undefined || Date.now() - since < 2 * this.d.electionMs) return;
    this.checking = true;
    try {
      for (const m of this.d.registry.list()) {
        const url = m.peerURLs[0];
        if (m.id === this.d.selfId || url === undefined) continue;
        const c = await fetchCluster(url, this.d.peerTls);
        if (c === undefined || c.clusterId !== this.d.registry.clusterId) continue;
        if (c.removed.map(Number).includes(this.d.selfId)) {
          this.d.logger.warn({ from: url }, 'a peer says this member was removed');
          this.d.onRemoved();
        }
        return;
      }
    } finally {
      this.checking = false;
    }
  }
}
