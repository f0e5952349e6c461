/**
 * etcdserverpb.Cluster: member list, add (learners too), remove, promote and update (a
 * member's peer URLs) through the member.
 */
import {
  decodeMemberAdd,
  decodeMemberId,
  decodeMemberList,
  decodeMemberUpdate,
} from '../etcd/decode.js';
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
  MemberUpdate: unary(async (body, ctx) => {
    const { id, peerURLs } = decodeMemberUpdate(body, 'protobuf');
    const r = await ctx.member.memberUpdate(id, peerURLs);
    return members(r.header, r.members);
  }),
};
