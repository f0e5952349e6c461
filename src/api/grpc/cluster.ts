/**
 * etcdserverpb.Cluster: member list, add (learners too), remove and promote through the member.
 * MemberUpdate (changing a member's peer URLs) is not offered by the member yet: it answers
 * Unimplemented, saying so.
 */
import { EtceteraError } from '../../errors.js';
import { decodeMemberAdd, decodeMemberId, decodeMemberList } from '../etcd/decode.js';
import { member, members } from './codec.js';
import { type ServiceImpl, unary } from './types.js';

export const clusterService: ServiceImpl = {
  MemberList: unary(async (body, ctx) => {
    decodeMemberList(body, 'protobuf');
    const r = await ctx.member.memberList();
    return members(r.header, r.members);
  }),
  MemberAdd: unary(async (body, ctx) => {
    const { peerURLs, isLearner } = decodeMemberAdd(body, 'protobuf');
    const r = await ctx.member.memberAdd(peerURLs, isLearner);
    return members(r.header, r.members, { member: member(r.member) });
  }),
  MemberRemove: unary(async (body, ctx) => {
    const r = await ctx.member.memberRemove(decodeMemberId(body, 'protobuf'));
    return members(r.header, r.members);
  }),
  MemberPromote: unary(async (body, ctx) => {
    const r = await ctx.member.memberPromote(decodeMemberId(body, 'protobuf'));
    return members(r.header, r.members);
  }),
  MemberUpdate: unary(async () => {
    throw new EtceteraError('ERR_GRPC_UNIMPLEMENTED', {
      detail: 'MemberUpdate: changing a member’s peer URLs is not supported; remove and add it',
    });
  }),
};
