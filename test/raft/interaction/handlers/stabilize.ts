/**
 * stabilize [ID...] — alternate process-ready and deliver-msgs over the given members
 * (default: all) until neither does anything.
 */
import { type Command, type InteractionEnv, intArgs } from '../env.js';
import { deliverTo } from './deliver-msgs.js';
import { processReadyOf } from './process-ready.js';

export function stabilize(env: InteractionEnv, cmd: Command): string[] {
  const ids = env.ids(intArgs(cmd));
  const out: string[] = [];
  for (let round = 0; round < 1000; round++) {
    const ready = processReadyOf(env, ids);
    const delivered = deliverTo(env, ids);
    if (ready.length === 0 && delivered.length === 0) return out.length > 0 ? out : ['ok'];
    out.push(...ready, ...delivered);
  }
  throw new Error('stabilize: no quiescence after 1000 rounds');
}
