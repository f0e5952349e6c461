/**
 * etcdserverpb.Maintenance.
 *
 * - Status: the member's status (version: see src/server/version.ts).
 * - Alarm: GET lists the raised alarms (NOSPACE, CORRUPT) as this member applied them;
 *   ACTIVATE and DEACTIVATE go through Raft and answer the alarm changed (src/server/alarms.ts).
 *   No header, as etcd answers it.
 * - Defragment: reclaims space with LevelDB's compaction while reads and writes go on
 *   (src/server/defrag.ts); answers once done.
 * - Hash, HashKV: a deterministic hash of the keyspace (src/store/hash.ts), equal on members
 *   that applied the same log; Hash is HashKV at the current revision.
 * - Snapshot: the member's state as etcd's snapshot, a bbolt database (src/server/etcd-snapshot.ts),
 *   streamed as it is built in 32 KiB chunks with remaining_bytes counting down, then one
 *   last message whose blob is the SHA-256 of everything sent, as etcd sends it. The stream
 *   waits for the connection to drain before building more; a cancelled call releases the
 *   store's snapshot.
 * - MoveLeader: leadership transfer, on the leader only.
 * - Downgrade: Unimplemented.
 */
import { createHash } from 'node:crypto';
import { EtceteraError } from '../../errors.js';
import type { MaintenanceApi } from '../../server/types.js';
import { etcdProto, uint64ToString } from '../../wire/proto/index.js';
import { decodeAlarm, decodeEmpty, decodeHashKV } from '../etcd/decode.js';
import { encodeResponse, header, headerOnly, status } from './codec.js';
import { grpcStatusOf } from './status.js';
import { type GrpcContext, type ServiceImpl, unary } from './types.js';

const SNAPSHOT_CHUNK = 32 * 1024;
const ALARM_NUMBER = { NOSPACE: 1, CORRUPT: 2 } as const;

function maintenanceOf(ctx: GrpcContext): MaintenanceApi {
  const m = ctx.member.maintenance;
  if (m === undefined)
    throw new EtceteraError('ERR_GRPC_UNIMPLEMENTED', { detail: 'this member has no maintenance' });
  return m;
}

/** Resolves once the call can take more, or is cancelled (then no 'drain' would come). */
function drainedOrCancelled(call: NodeJS.EventEmitter): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.off('drain', done);
      call.off('cancelled', done);
      resolve();
    };
    call.once('drain', done);
    call.once('cancelled', done);
  });
}

export const maintenanceService: ServiceImpl = {
  Status: unary(async (body, ctx) => {
    decodeEmpty(body, 'protobuf');
    return status(await ctx.member.status());
  }),
  Alarm: unary(async (body, ctx) => {
    const r = await maintenanceOf(ctx).alarm(decodeAlarm(body, 'protobuf'));
    return {
      alarms: r.alarms.map((a) => ({ memberID: a.memberId, alarm: ALARM_NUMBER[a.alarm] })),
    };
  }),
  Defragment: unary(async (body, ctx) => {
    decodeEmpty(body, 'protobuf');
    await maintenanceOf(ctx).defragment();
    return {};
  }),
  Hash: unary(async (_b, ctx) => {
    const r = await maintenanceOf(ctx).hashKV(0);
    return { header: header(r.header), hash: r.hash };
  }),
  HashKV: unary(async (body, ctx) => {
    const r = await maintenanceOf(ctx).hashKV(decodeHashKV(body, 'protobuf'));
    return { header: header(r.header), hash: r.hash, compact_revision: r.compactRevision };
  }),
  MoveLeader: unary(async (body, ctx) => {
    const r = await maintenanceOf(ctx).moveLeader(uint64ToString(body.targetID ?? '0'));
    return headerOnly(r.header);
  }),
  Downgrade: unary(async () => {
    throw new EtceteraError('ERR_GRPC_UNIMPLEMENTED', { detail: 'Downgrade' });
  }),
  Snapshot: {
    kind: 'serverStream',
    handle(_request, call, ctx) {
      const type = etcdProto().type('etcdserverpb.SnapshotResponse');
      let stopped = false;
      call.on('cancelled', () => {
        stopped = true;
      });
      const run = async () => {
        const snap = await maintenanceOf(ctx).snapshot();
        const digest = createHash('sha256');
        const hdr = header(snap.header);
        let sent = 0;
        try {
          for await (const chunk of snap.chunks) {
            for (let at = 0; at < chunk.length && !stopped; at += SNAPSHOT_CHUNK) {
              const blob = chunk.subarray(at, Math.min(chunk.length, at + SNAPSHOT_CHUNK));
              sent += blob.length;
              digest.update(blob);
              const ok = call.write(
                encodeResponse(type, { header: hdr, remaining_bytes: snap.size - sent, blob }),
              );
              if (!ok) await drainedOrCancelled(call);
            }
            if (stopped) break;
          }
        } finally {
          await snap.chunks.return(undefined);
        }
        if (stopped) return;
        if (sent !== snap.size)
          throw new EtceteraError('ERR_BOLT_WRITE', {
            detail: `sent ${sent} of ${snap.size} bytes`,
          });
        call.write(encodeResponse(type, { header: hdr, blob: digest.digest() }));
        call.end();
      };
      run().catch((e) => {
        if (stopped) return;
        const s = grpcStatusOf(e);
        call.emit('error', { code: s.code, details: s.details });
      });
    },
  },
};
