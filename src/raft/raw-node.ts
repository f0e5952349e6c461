import type { RaftConfig, RawNode } from './types.js';

export function createRawNode(_config: RaftConfig): RawNode {
  throw new Error('raft core: not implemented yet');
}
