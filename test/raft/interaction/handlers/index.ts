/** The command table of the interaction scripts. */
import type { Handler } from '../env.js';
import { addNodes } from './add-nodes.js';
import { deliverMsgs } from './deliver-msgs.js';
import { compact, heal, isolate, reportSnapshot, reportUnreachable, restart } from './faults.js';
import { raftLog, raftState, status } from './inspect.js';
import { campaign, propose, proposeConfChange, readIndex, transferLeader } from './node-calls.js';
import { processReady } from './process-ready.js';
import { stabilize } from './stabilize.js';
import { tick, tickElection, tickHeartbeat } from './tick.js';

export const handlers: Record<string, Handler> = {
  'add-nodes': addNodes,
  campaign,
  propose,
  'propose-conf-change': proposeConfChange,
  'read-index': readIndex,
  'transfer-leader': transferLeader,
  tick,
  'tick-election': tickElection,
  'tick-heartbeat': tickHeartbeat,
  'process-ready': processReady,
  'deliver-msgs': deliverMsgs,
  stabilize,
  'raft-state': raftState,
  'raft-log': raftLog,
  status,
  isolate,
  heal,
  restart,
  compact,
  'report-snapshot': reportSnapshot,
  'report-unreachable': reportUnreachable,
};
