/**
 * src/server: one member of an etcetera cluster (Raft + store + listeners), its config with
 * etcd's flag names, and the contract the HTTP faces use. Public surface.
 *
 *   const member = await Member.start(resolveConfig({ name: 'm1', dataDir: './m1' }));
 *   await member.write({ op: 'put', key, value });
 *   await member.stop();
 */

export type { MemberConfig, MemberConfigInput } from './config.js';
export { ClusterState, CompactionMode, DEFAULTS, LogLevel, resolveConfig } from './config.js';
export { parseServeArgs } from './flags.js';
export type { MemberOptions } from './member.js';
export { Member } from './member.js';
export type {
  MemberApi,
  MemberInfo,
  MemberStatus,
  ReadOptions,
  ResponseHeader,
} from './types.js';
export { ETCD_VERSION, ETCETERA_VERSION } from './version.js';
