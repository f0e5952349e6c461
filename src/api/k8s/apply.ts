/**
 * Server-side apply, in the minimal faithful form of k8s-client-compat.md 3.6: the applied
 * object is merged into the live one (maps merged, keyed lists merged by their key as
 * strategic merge patch does for built-in kinds, other lists replaced). Field ownership
 * (managedFields), conflicts and removal of fields a manager stopped applying are not kept.
 */
import type { JsonMap } from './lib/json.js';
import { applyMergePatch } from './lib/patch.js';
import { smpSchemaFor } from './lib/smp-schemas.js';
import { strategicMerge } from './lib/strategic-merge.js';
import type { KubeObject, ResourceInfo } from './types.js';

/** Drops `null` values: in an applied configuration they mean "not set", not "delete". */
function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = withoutNulls(x);
  return out;
}

export function applyMerge(info: ResourceInfo, live: KubeObject, applied: KubeObject): unknown {
  const patch = withoutNulls(applied) as JsonMap;
  const schema = info.strategicMerge
    ? smpSchemaFor(info.group, info.version, info.kind)
    : undefined;
  if (schema) return strategicMerge(live as unknown as JsonMap, patch, schema);
  return applyMergePatch(live, patch);
}
