/**
 * `etcetera serve --control-plane` (or single parts): the control plane of MemberConfig's
 * `controlPlane` run against the member's own first client URL, over HTTP like any client.
 */
import { KubeClient } from '../client/k8s/client.js';
import { CONTROL_PLANE_ALL, type MemberConfig } from '../server/config.js';
import type { Member } from '../server/member.js';
import {
  allParts,
  type ControlPlaneOptions,
  type RunningControlPlane,
  runControlPlane,
} from './index.js';
import { PARTS, partEnabled } from './parts.js';

export function controlPlaneOptions(config: MemberConfig): ControlPlaneOptions {
  const { parts, clusterCidr, nodeReadinessDelayMs, schedulerSeed } = config.controlPlane;
  const o: ControlPlaneOptions = parts[CONTROL_PLANE_ALL] ? allParts(3) : {};
  for (const [k, v] of Object.entries(parts)) if (k !== CONTROL_PLANE_ALL) o[k] = v;
  o.nodeOptions = { clusterCidr, readinessDelayMs: nodeReadinessDelayMs };
  if (schedulerSeed !== undefined) o.schedulerOptions = { seed: schedulerSeed };
  return o;
}

export function controlPlaneEnabled(config: MemberConfig): boolean {
  const o = controlPlaneOptions(config);
  return PARTS.some((p) => partEnabled(p, o));
}

export async function startForMember(member: Member): Promise<RunningControlPlane> {
  const url = member.advertisedClientUrls()[0] as string;
  const o = controlPlaneOptions(member.config);
  const logger = member.logger;
  const token = member.loopbackToken;
  const headers = token !== undefined ? { Authorization: `Bearer ${token}` } : undefined;
  const cp = await runControlPlane(
    new KubeClient({ baseUrl: url, ...(headers ? { headers } : {}) }),
    {
      ...o,
      logger: { warn: (obj, msg) => logger.warn(obj, msg) },
    },
  );
  logger.info(
    {
      parts: [...cp.parts.keys()],
      nodes: cp.nodes?.nodeNames.length ?? 0,
      ...(cp.parts.has('scheduler') ? { schedulerSeed: o.schedulerOptions?.seed ?? null } : {}),
    },
    'control plane started',
  );
  return cp;
}
