/**
 * Per-kind normalisation Kubernetes applies before validation (its strategies'
 * PrepareForCreate/PrepareForUpdate beyond metadata): a Secret's stringData is merged into
 * data as base64 and never stored; a CRD schema's defaults are set.
 */
import type { KubeObject, ResourceInfo } from './types.js';

function secretStringData(obj: KubeObject): void {
  const sd = obj.stringData;
  if (sd === undefined || sd === null) {
    delete obj.stringData;
    return;
  }
  if (typeof sd !== 'object' || Array.isArray(sd)) return; // validation reports it
  const data: Record<string, unknown> =
    obj.data && typeof obj.data === 'object' && !Array.isArray(obj.data)
      ? { ...(obj.data as Record<string, unknown>) }
      : {};
  for (const [k, v] of Object.entries(sd as Record<string, unknown>)) {
    data[k] = Buffer.from(String(v), 'utf8').toString('base64');
  }
  obj.data = data;
  delete obj.stringData;
}

export function normalizeObject(info: ResourceInfo, obj: KubeObject): void {
  if (info.group === '' && info.resource === 'secrets') secretStringData(obj);
  // CRD schemas: defaults after pruning (decode.ts), before validation, as Kubernetes does.
  info.schema?.applyDefaults?.(obj);
}
