/** POST /v3/kv/{range,put,deleterange,txn,compaction}. */
import {
  decodeCompaction,
  decodeDeleteRange,
  decodePut,
  decodeRange,
  decodeTxn,
} from './decode.js';
import {
  encodeDeleteRange,
  encodeHeaderOnly,
  encodePut,
  encodeRange,
  encodeTxn,
} from './encode.js';
import { type RouteTable, write } from './route.js';

export const kvRoutes: RouteTable = {
  '/v3/kv/range': {
    async handle(body, ctx) {
      const request = decodeRange(body);
      const { header, result } = await ctx.member.range(request, {
        serializable: request.serializable === true,
      });
      return encodeRange(header, result);
    },
  },
  '/v3/kv/put': {
    async handle(body, ctx) {
      const { header, result } = await write(ctx, { op: 'put', ...decodePut(body) });
      return encodePut(header, result);
    },
  },
  '/v3/kv/deleterange': {
    async handle(body, ctx) {
      const { header, result } = await write(ctx, {
        op: 'deleteRange',
        ...decodeDeleteRange(body),
      });
      return encodeDeleteRange(header, result);
    },
  },
  '/v3/kv/txn': {
    async handle(body, ctx) {
      const { header, result } = await write(ctx, { op: 'txn', ...decodeTxn(body) });
      return encodeTxn(header, result);
    },
  },
  '/v3/kv/compaction': {
    // `physical` asks etcd to answer only once the old versions are gone from disk; the
    // store compacts physically in the background, so the answer comes after the logical step.
    async handle(body, ctx) {
      const { revision } = decodeCompaction(body);
      const { header } = await write(ctx, { op: 'compact', revision });
      return encodeHeaderOnly(header);
    },
  },
};
