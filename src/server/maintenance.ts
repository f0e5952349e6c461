/**
 * A member's maintenance operations for etcd's Maintenance service: snapshot (the member's
 * state as etcd's bbolt snapshot, streamed: etcd-snapshot.ts), HashKV (src/store/hash.ts), MoveLeader (the driver's leadership
 * transfer), Alarm (src/server/alarms.ts) and Defragment (src/server/defrag.ts).
 */
import { EtceteraError } from '../errors.js';
import type { RaftDriver } from '../raft/driver/driver.js';
import { NodeId } from '../raft/types.js';
import { hashKeyspace } from '../store/hash.js';
import type { Store } from '../store/store.js';
import { type AlarmDeps, handleAlarm } from './alarms.js';
import type { Defragmenter } from './defrag.js';
import { etcdSnapshot } from './etcd-snapshot.js';
import { parseMemberId } from './ids.js';
import type { MemberRegistry } from './registry.js';
import type { MaintenanceApi, ResponseHeader } from './types.js';

export interface MaintenanceDeps {
  store: Store;
  registry: MemberRegistry;
  driver: RaftDriver;
  selfId: NodeId;
  header(): ResponseHeader;
  /** Throws when the member is stopping or failed. */
  assertServing(): void;
  alarms: AlarmDeps;
  defrag: Defragmenter;
}

export function createMaintenance(d: MaintenanceDeps): MaintenanceApi {
  return {
    async snapshot() {
      d.assertServing();
      const header = d.header();
      const snap = await etcdSnapshot(d.store, d.registry.toRecord());
      return { header, size: snap.size, chunks: snap.chunks };
    },
    async hashKV(revision) {
      d.assertServing();
      const r = await hashKeyspace(d.store, revision);
      return { header: d.header(), ...r };
    },
    async moveLeader(targetId) {
      d.assertServing();
      const target = parseMemberId(targetId);
      const st = d.driver.status();
      if (st.leader !== d.selfId) throw new EtceteraError('ERR_NOT_LEADER');
      const member = target === undefined ? undefined : d.registry.get(target);
      if (target === undefined || member === undefined || member.isLearner)
        throw new EtceteraError('ERR_BAD_LEADER_TRANSFEREE');
      await d.driver.transferLeader(NodeId(target));
      return { header: d.header() };
    },
    async alarm(request) {
      d.assertServing();
      return handleAlarm(d.alarms, request);
    },
    async defragment() {
      d.assertServing();
      const r = await d.defrag.run();
      return { header: d.header(), ...r };
    },
  };
}
