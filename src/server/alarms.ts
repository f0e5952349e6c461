/**
 * A member's side of etcd's Alarm call: GET answers the alarms as this member applied them
 * (src/store/alarms.ts keeps them), ACTIVATE and DEACTIVATE are `alarm` commands through
 * Raft, so every member raises and clears the same alarms at the same log index. Also the
 * text etcd prints for an alarm in Status `errors` and in its log.
 */

import { EtceteraError } from '../errors.js';
import type { Alarm, Command, CommandResult } from '../store/types.js';
import type { Logger } from './logger.js';
import type { AlarmRequest } from './types.js';

export interface AlarmDeps {
  alarms(): Alarm[];
  /** Checks and proposes a command through Raft; resolves once applied on this member. */
  propose(c: Command): Promise<CommandResult>;
  logger: Logger;
}

/** etcd's rendering of an alarm member (protobuf text form), as `alarm list` and Status print it. */
export function alarmText(a: Alarm): string {
  return `memberID:${a.memberId} alarm:${a.alarm} `;
}

export async function handleAlarm(d: AlarmDeps, r: AlarmRequest): Promise<{ alarms: Alarm[] }> {
  if (r.action === 'GET')
    return { alarms: d.alarms().filter((a) => r.alarm === 'NONE' || a.alarm === r.alarm) };
  if (r.alarm === 'NONE') {
    // etcd would store a NONE alarm; there is nothing it could mean, so it is refused.
    if (r.action === 'DEACTIVATE') return { alarms: [] };
    throw new EtceteraError('ERR_BAD_FIELD', {
      detail: 'alarm: ACTIVATE needs an alarm type, NOSPACE or CORRUPT',
    });
  }
  const action = r.action === 'ACTIVATE' ? 'activate' : 'deactivate';
  const result = await d.propose({ op: 'alarm', action, memberId: r.memberId, alarm: r.alarm });
  const changed = result.op === 'alarm' ? result.result.alarms : [];
  for (const a of changed)
    d.logger.warn(
      { memberID: a.memberId, alarm: a.alarm },
      action === 'activate' ? 'alarm raised' : 'alarm disarmed',
    );
  return { alarms: changed };
}
