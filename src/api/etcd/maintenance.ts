/**
 * POST /v3/maintenance/{alarm,defragment,hash}, as etcd's gateway answers them: an alarm
 * answer has no header and lists `{memberID, alarm}` (`{}` when empty), a defragment answer
 * is `{}`. `hash` takes HashKV's optional `revision` too (etcd 3.4's gateway has no hashkv
 * route; etcetera's JSON client asks `hash` with a revision).
 */
import { EtceteraError } from '../../errors.js';
import type { MaintenanceApi } from '../../server/types.js';
import { encodeHeader } from '../../wire/etcd-json.js';
import { decodeAlarm, decodeEmpty, decodeHashKV } from './decode.js';
import type { RouteContext, RouteTable } from './route.js';

function maintenanceOf(ctx: RouteContext): MaintenanceApi {
  const m = ctx.member.maintenance;
  if (m === undefined)
    throw new EtceteraError('ERR_GRPC_UNIMPLEMENTED', { detail: 'this member has no maintenance' });
  return m;
}

export const maintenanceRoutes: RouteTable = {
  '/v3/maintenance/alarm': {
    async handle(body, ctx) {
      const r = await maintenanceOf(ctx).alarm(decodeAlarm(body));
      if (r.alarms.length === 0) return {};
      return { alarms: r.alarms.map((a) => ({ memberID: a.memberId, alarm: a.alarm })) };
    },
  },
  '/v3/maintenance/defragment': {
    async handle(body, ctx) {
      decodeEmpty(body);
      await maintenanceOf(ctx).defragment();
      return {};
    },
  },
  '/v3/maintenance/hash': {
    async handle(body, ctx) {
      const r = await maintenanceOf(ctx).hashKV(decodeHashKV(body));
      return {
        header: encodeHeader(r.header),
        hash: r.hash === 0 ? undefined : r.hash,
        compact_revision: r.compactRevision > 0 ? String(r.compactRevision) : undefined,
      };
    },
  },
};
