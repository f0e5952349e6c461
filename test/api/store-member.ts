/**
 * A MemberApi test double: the real store (src/store), no Raft. Writes go through
 * `submit`, reads through `range`, leases through the store's lessor; the header is fixed
 * (one cluster, one member, term 2) but its revision is the store's. Membership is a list in
 * memory. Semantics are the store's own, so answers match what a one-member etcd gives.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { type ApiOptions, createEtcdApi } from '../../src/api/index.js';
import { EtceteraError } from '../../src/errors.js';
import type {
  MemberApi,
  MemberInfo,
  MemberStatus,
  ReadOptions,
  ResponseHeader,
} from '../../src/server/types.js';
import { type EmbeddedStore, open } from '../../src/store/index.js';
import type { Command, LeaseId, RangeRequest, Revision } from '../../src/store/types.js';

export const CLUSTER_ID = '14841639068965178418';
export const MEMBER_ID = '10276657743932975437';

export interface StoreMemberOptions {
  dir: string;
  maxRequestBytes?: number;
  minLeaseTtl?: number;
}

export class StoreMember implements MemberApi {
  readonly metrics = new Registry();
  readonly maxRequestBytes: number;
  private members: MemberInfo[] = [
    {
      id: MEMBER_ID,
      name: 'default',
      peerURLs: ['http://127.0.0.1:2380'],
      clientURLs: ['http://127.0.0.1:2379'],
      isLearner: false,
    },
  ];

  private constructor(
    readonly store: EmbeddedStore,
    maxRequestBytes: number,
  ) {
    this.maxRequestBytes = maxRequestBytes;
  }

  static async open(o: StoreMemberOptions): Promise<StoreMember> {
    const maxRequestBytes = o.maxRequestBytes ?? 1.5 * 1024 * 1024;
    const store = await open({
      dir: o.dir,
      sync: false,
      maxRequestBytes,
      minLeaseTtl: o.minLeaseTtl ?? 1,
      leaseCheckIntervalMs: 200,
    });
    return new StoreMember(store, maxRequestBytes);
  }

  get watchSource() {
    return this.store;
  }

  header(revision: Revision = this.store.currentRevision): ResponseHeader {
    return { clusterId: CLUSTER_ID, memberId: MEMBER_ID, revision, raftTerm: 2 };
  }

  /** Every read of the store is consistent; `serializable` changes nothing here. */
  async range(request: RangeRequest, _options?: ReadOptions) {
    const result = await this.store.range(request);
    return { header: this.header(result.revision), result };
  }

  async write(command: Command) {
    let c = command;
    if (c.op === 'leaseGrant' && c.id === 0) c = { ...c, id: this.store.lessor.chooseId() };
    const result = await this.store.submit(c);
    const revision = Math.max(result.result.revision, 1) as Revision;
    return { header: this.header(revision), result };
  }

  async leaseKeepAlive(id: LeaseId) {
    const ttl = this.store.lessor.keepAlive(id) ?? 0;
    return { header: this.header(), id, ttl };
  }

  async leaseTimeToLive(id: LeaseId, keys: boolean) {
    return { header: this.header(), lease: this.store.leaseTimeToLive(id, { keys }) };
  }

  async leaseLeases() {
    return { header: this.header(), leases: this.store.leases() };
  }

  async memberList() {
    return { header: this.header(), members: this.members.map((m) => ({ ...m })) };
  }

  async memberAdd(peerURLs: string[], isLearner: boolean) {
    const member: MemberInfo = {
      id: BigInt(`0x${randomBytes(8).toString('hex')}`).toString(),
      name: '',
      peerURLs,
      clientURLs: [],
      isLearner,
    };
    this.members.push(member);
    return { header: this.header(), member, members: this.members.map((m) => ({ ...m })) };
  }

  async memberRemove(id: string) {
    this.find(id);
    this.members = this.members.filter((m) => m.id !== id);
    return { header: this.header(), members: this.members.map((m) => ({ ...m })) };
  }

  async memberPromote(id: string) {
    this.find(id).isLearner = false;
    return { header: this.header(), members: this.members.map((m) => ({ ...m })) };
  }

  async memberUpdate(id: string, peerURLs: string[]) {
    this.find(id).peerURLs = [...peerURLs];
    return { header: this.header(), members: this.members.map((m) => ({ ...m })) };
  }

  private find(id: string): MemberInfo {
    const m = this.members.find((x) => x.id === id);
    if (!m) throw new EtceteraError('ERR_MEMBER_NOT_FOUND');
    return m;
  }

  async status(): Promise<MemberStatus> {
    const applied = this.store.appliedIndex;
    return {
      header: this.header(),
      version: '3.4.23',
      dbSize: 20480,
      dbSizeInUse: 16384,
      leader: MEMBER_ID,
      raftIndex: applied,
      raftTerm: 2,
      raftAppliedIndex: applied,
      errors: [],
      isLearner: false,
    };
  }

  health() {
    return { health: true, reason: '' };
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

export interface ApiServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Serves the API for `member` on 127.0.0.1 on a free port, websocket watches included. */
export async function serveApi(member: MemberApi, options: ApiOptions = {}): Promise<ApiServer> {
  const api = createEtcdApi(member, options);
  const server = createServer(api.app);
  server.on('upgrade', (req, socket, head) => {
    if (!api.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: async () => {
      await api.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
