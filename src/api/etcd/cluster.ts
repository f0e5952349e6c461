/** POST /v3/cluster/member/{list,add,remove,promote,update} and /v3/maintenance/status. */
import {
  decodeEmpty,
  decodeMemberAdd,
  decodeMemberId,
  decodeMemberList,
  decodeMemberUpdate,
} from './decode.js';
import { encodeMember, encodeMembers, encodeStatus } from './encode.js';
import type { RouteTable } from './route.js';

export const clusterRoutes: RouteTable = {
  '/v3/cluster/member/list': {
    async handle(body, ctx) {
      decodeMemberList(body);
      const { header, members } = await ctx.member.memberList();
      return encodeMembers(header, members);
    },
  },
  '/v3/cluster/member/add': {
    async handle(body, ctx) {
      const { peerURLs, isLearner } = decodeMemberAdd(body);
      const { header, member, members } = await ctx.member.memberAdd(peerURLs, isLearner);
      return encodeMembers(header, members, { member: encodeMember(member) });
    },
  },
  '/v3/cluster/member/remove': {
    async handle(body, ctx) {
      const { header, members } = await ctx.member.memberRemove(decodeMemberId(body));
      return encodeMembers(header, members);
    },
  },
  '/v3/cluster/member/promote': {
    async handle(body, ctx) {
      const { header, members } = await ctx.member.memberPromote(decodeMemberId(body));
      return encodeMembers(header, members);
    },
  },
  '/v3/cluster/member/update': {
    async handle(body, ctx) {
      const { id, peerURLs } = decodeMemberUpdate(body);
      const { header, members } = await ctx.member.memberUpdate(id, peerURLs);
      return encodeMembers(header, members);
    },
  },
  '/v3/maintenance/status': {
    async handle(body, ctx) {
      decodeEmpty(body);
      return encodeStatus(await ctx.member.status());
    },
  },
};
