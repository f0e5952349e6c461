/**
 * etcdserverpb.Lease: grant and revoke are writes, keepalive a bidirectional stream answered
 * in request order, time-to-live and leases read the leader's lessor (through the member).
 */
import type { LeaseId } from '../../store/types.js';
import { etcdProto } from '../../wire/proto/index.js';
import {
  decodeEmpty,
  decodeLeaseGrant,
  decodeLeaseId,
  decodeLeaseTimeToLive,
} from '../etcd/decode.js';
import { write } from '../etcd/route.js';
import { decodeRequest, encodeResponse, header, headerOnly } from './codec.js';
import { grpcStatusOf } from './status.js';
import { type ServiceImpl, unary } from './types.js';

const nz = (n: number): number | undefined => (n === 0 ? undefined : n);

export const leaseService: ServiceImpl = {
  LeaseGrant: unary(async (body, ctx) => {
    const { ttl, id } = decodeLeaseGrant(body, 'protobuf');
    const { header: h, result } = await write(ctx, { op: 'leaseGrant', id, ttl });
    return { header: header(h), ID: nz(result.id), TTL: nz(result.ttl) };
  }),
  LeaseRevoke: unary(async (body, ctx) => {
    const id = decodeLeaseId(body, 'protobuf');
    const { header: h } = await write(ctx, { op: 'leaseRevoke', id });
    return headerOnly(h);
  }),
  LeaseTimeToLive: unary(async (body, ctx) => {
    const { id, keys } = decodeLeaseTimeToLive(body, 'protobuf');
    const { header: h, lease } = await ctx.member.leaseTimeToLive(id as LeaseId, keys);
    return {
      header: header(h),
      ID: nz(lease.id),
      TTL: nz(lease.ttl),
      grantedTTL: nz(lease.grantedTtl),
      keys: lease.keys,
    };
  }),
  LeaseLeases: unary(async (body, ctx) => {
    decodeEmpty(body, 'protobuf');
    const { header: h, leases } = await ctx.member.leaseLeases();
    return { header: header(h), leases: leases.map((id) => ({ ID: id })) };
  }),
  LeaseKeepAlive: {
    kind: 'bidi',
    handle(call, ctx) {
      const p = etcdProto();
      const reqType = p.type('etcdserverpb.LeaseKeepAliveRequest');
      const resType = p.type('etcdserverpb.LeaseKeepAliveResponse');
      // One request at a time, so answers come in request order.
      let chain = Promise.resolve();
      let ended = false;
      const fail = (e: unknown) => {
        if (ended) return;
        ended = true;
        const s = grpcStatusOf(e);
        call.emit('error', { code: s.code, details: s.details });
      };
      call.on('data', (bytes: Buffer) => {
        chain = chain.then(async () => {
          if (ended) return;
          try {
            const id = decodeLeaseId(decodeRequest(reqType, bytes), 'protobuf');
            const r = await ctx.member.leaseKeepAlive(id as LeaseId);
            if (!ended && !call.writableEnded && !call.destroyed)
              call.write(
                encodeResponse(resType, { header: header(r.header), ID: nz(r.id), TTL: nz(r.ttl) }),
              );
          } catch (e) {
            fail(e);
          }
        });
      });
      call.on('end', () => {
        chain = chain.then(() => {
          if (ended) return;
          ended = true;
          call.end();
        });
      });
      call.on('error', () => {
        ended = true;
      });
      call.on('cancelled', () => {
        ended = true;
      });
    },
  },
};
