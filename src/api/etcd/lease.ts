/**
 * POST /v3/lease/{grant,revoke,keepalive,timetolive,leases}, and the older paths etcd 3.4
 * still serves them on (/v3/kv/lease/revoke, /v3/kv/lease/timetolive, /v3/kv/lease/leases).
 */
import type { LeaseId } from '../../store/types.js';
import { decodeEmpty, decodeLeaseGrant, decodeLeaseId, decodeLeaseTimeToLive } from './decode.js';
import {
  encodeHeaderOnly,
  encodeLeaseGrant,
  encodeLeaseKeepAlive,
  encodeLeaseLeases,
  encodeLeaseTimeToLive,
} from './encode.js';
import type { Route, RouteTable } from './route.js';
import { write } from './route.js';

const revoke: Route = {
  async handle(body, ctx) {
    const id = decodeLeaseId(body);
    const { header } = await write(ctx, { op: 'leaseRevoke', id });
    return encodeHeaderOnly(header);
  },
};

const timeToLive: Route = {
  async handle(body, ctx) {
    const { id, keys } = decodeLeaseTimeToLive(body);
    const { header, lease } = await ctx.member.leaseTimeToLive(id as LeaseId, keys);
    return encodeLeaseTimeToLive(header, lease);
  },
};

const leases: Route = {
  async handle(body, ctx) {
    decodeEmpty(body);
    const { header, leases } = await ctx.member.leaseLeases();
    return encodeLeaseLeases(header, leases);
  },
};

export const leaseRoutes: RouteTable = {
  '/v3/lease/grant': {
    async handle(body, ctx) {
      const { ttl, id } = decodeLeaseGrant(body);
      const { header, result } = await write(ctx, { op: 'leaseGrant', id, ttl });
      return encodeLeaseGrant(header, result.id, result.ttl);
    },
  },
  '/v3/lease/revoke': revoke,
  '/v3/kv/lease/revoke': revoke,
  '/v3/lease/keepalive': {
    stream: true,
    async handle(body, ctx) {
      const id = decodeLeaseId(body);
      const r = await ctx.member.leaseKeepAlive(id as LeaseId);
      return encodeLeaseKeepAlive(r.header, r.id, r.ttl);
    },
  },
  '/v3/lease/timetolive': timeToLive,
  '/v3/kv/lease/timetolive': timeToLive,
  '/v3/lease/leases': leases,
  '/v3/kv/lease/leases': leases,
};
