/** etcdserverpb.KV: Range, Put, DeleteRange, Txn, Compact — the JSON face's decoders and checks. */
import {
  decodeCompaction,
  decodeDeleteRange,
  decodePut,
  decodeRange,
  decodeTxn,
} from '../etcd/decode.js';
import { write } from '../etcd/route.js';
import {
  deleteRangeResponse,
  headerOnly,
  putResponse,
  rangeResponse,
  txnResponse,
} from './codec.js';
import { type ServiceImpl, unary } from './types.js';

export const kvService: ServiceImpl = {
  Range: unary(async (body, ctx) => {
    const request = decodeRange(body, '', 'protobuf');
    const { header, result } = await ctx.member.range(request, {
      serializable: request.serializable === true,
    });
    return rangeResponse(header, result);
  }),
  Put: unary(async (body, ctx) => {
    const { header, result } = await write(ctx, {
      op: 'put',
      ...decodePut(body, '', 'protobuf'),
    });
    return putResponse(header, result);
  }),
  DeleteRange: unary(async (body, ctx) => {
    const { header, result } = await write(ctx, {
      op: 'deleteRange',
      ...decodeDeleteRange(body, '', 'protobuf'),
    });
    return deleteRangeResponse(header, result);
  }),
  Txn: unary(async (body, ctx) => {
    const { header, result } = await write(ctx, { op: 'txn', ...decodeTxn(body, 'protobuf') });
    return txnResponse(header, result);
  }),
  // `physical`: the store compacts physically in the background; answered after the logical step.
  Compact: unary(async (body, ctx) => {
    const { revision } = decodeCompaction(body, 'protobuf');
    const { header } = await write(ctx, { op: 'compact', revision });
    return headerOnly(header);
  }),
};
