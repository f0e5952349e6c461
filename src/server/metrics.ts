/**
 * A member's Prometheus metrics, in a Registry of its own (several members may share a
 * process in tests). Names follow etcd's where etcd has the same metric, so dashboards made
 * for etcd read these too; gauges that mirror state are read at scrape time.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface MetricSources {
  hasLeader(): boolean;
  isLeader(): boolean;
  keys(): number;
  revision(): number;
  compactRevision(): number;
  leases(): number;
  pendingProposals(): number;
  appliedIndex(): number;
  term(): number;
}

export class MemberMetrics {
  readonly registry = new Registry();
  readonly proposalsCommitted: Counter;
  readonly proposalsFailed: Counter;
  readonly applyDuration: Histogram;
  readonly leaderChanges: Counter;
  readonly slowApplies: Counter;
  readonly compactions: Counter;
  readonly leaseForwards: Counter;
  readonly peerDropped: Counter<'reason'>;
  /** Client connections closed at once because --max-connections were open. */
  readonly clientConnectionsRefused: Counter;
  /** Client connections closed for being too slow (reason: header, preface). */
  readonly clientConnectionsTimedOut: Counter<'reason'>;

  constructor(src: MetricSources) {
    const registers = [this.registry];
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    this.proposalsCommitted = new Counter({
      name: 'etcd_server_proposals_committed_total',
      help: 'Proposals of this member committed and applied.',
      registers,
    });
    this.proposalsFailed = new Counter({
      name: 'etcd_server_proposals_failed_total',
      help: 'Proposals of this member that failed (dropped, timed out, leader changed).',
      registers,
    });
    this.applyDuration = new Histogram({
      name: 'etcd_server_apply_duration_seconds',
      help: 'Time to apply one batch of committed entries to the store.',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.leaderChanges = new Counter({
      name: 'etcd_server_leader_changes_seen_total',
      help: 'Leader changes seen by this member.',
      registers,
    });
    this.slowApplies = new Counter({
      name: 'etcd_server_slow_apply_total',
      help: 'Apply batches that took longer than 100 ms.',
      registers,
    });
    this.compactions = new Counter({
      name: 'etcetera_server_auto_compactions_total',
      help: 'Compactions proposed by the auto-compactor.',
      registers,
    });
    this.leaseForwards = new Counter({
      name: 'etcetera_server_lease_forwards_total',
      help: 'Lease keepalive and time-to-live requests forwarded to the leader.',
      registers,
    });
    this.peerDropped = new Counter({
      name: 'etcetera_network_peer_dropped_messages_total',
      help: 'Inbound Raft messages dropped by the peer transport (reason: not_member).',
      labelNames: ['reason'],
      registers,
    });
    this.clientConnectionsRefused = new Counter({
      name: 'etcetera_client_connections_refused_total',
      help: 'Client connections closed on accept because --max-connections were open.',
      registers,
    });
    this.clientConnectionsTimedOut = new Counter({
      name: 'etcetera_client_connections_timed_out_total',
      help: 'Client connections closed for not sending their first bytes, or an HTTP/2 preface and SETTINGS, within --read-header-timeout.',
      labelNames: ['reason'],
      registers,
    });
    gauge('etcd_server_has_leader', '1 when this member knows a leader.', () => +src.hasLeader());
    gauge('etcd_server_is_leader', '1 when this member is the leader.', () => +src.isLeader());
    gauge(
      'etcd_server_proposals_pending',
      'Proposals waiting to be applied.',
      src.pendingProposals,
    );
    gauge('etcd_server_proposals_applied_total', 'The applied Raft index.', src.appliedIndex);
    gauge('etcd_server_term', 'The current Raft term.', src.term);
    gauge('etcd_debugging_mvcc_keys_total', 'Live keys in the store.', src.keys);
    gauge('etcd_mvcc_current_revision', 'The store revision.', src.revision);
    gauge(
      'etcd_mvcc_compact_revision',
      'The revision the store is compacted to.',
      src.compactRevision,
    );
    gauge('etcetera_server_leases', 'Live leases.', src.leases);
  }
}
