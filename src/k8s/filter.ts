/**
 * What a list or watch selects: the namespace of the path, a label selector and a field
 * selector (selectors.ts parses them), compiled into one predicate plus an index hint.
 */
import {
  type FieldSelector,
  fieldExactMatch,
  type LabelSelector,
  matchFields,
  matchLabels,
  parseFieldSelector,
  parseLabelSelector,
} from './selectors.js';
import type { KubeObject, ResourceInfo } from './types.js';

export interface ObjectFilter {
  /** The namespace selected by the path (or by a metadata.namespace= field selector). */
  readonly namespace: string | undefined;
  /** An equality on metadata.name or an indexed field: lists and watches use its index. */
  readonly hint: { readonly field: string; readonly value: string } | undefined;
  /** True when nothing but the namespace is selected. */
  readonly selectsAll: boolean;
  matches(obj: KubeObject): boolean;
}

function fieldGetter(info: ResourceInfo, obj: KubeObject): (path: string) => string {
  return (path) => {
    if (path === 'metadata.name') return obj.metadata.name ?? '';
    if (path === 'metadata.namespace') return obj.metadata.namespace ?? '';
    return info.fields[path]?.(obj) ?? '';
  };
}

/**
 * Compiles the selectors of a request. Throws 400 (BadRequest) for a malformed selector and
 * `field label not supported: <f>` for a field the kind does not serve.
 */
export function compileFilter(
  info: ResourceInfo,
  pathNamespace: string | undefined,
  labelSelector: string,
  fieldSelector: string,
): ObjectFilter {
  const labels: LabelSelector = parseLabelSelector(labelSelector);
  const supported = (f: string) =>
    f === 'metadata.name' || f === 'metadata.namespace' || Object.hasOwn(info.fields, f);
  const fields: FieldSelector = parseFieldSelector(fieldSelector, supported);
  const fieldNamespace = fieldExactMatch(fields, 'metadata.namespace');
  const namespace = pathNamespace ?? (info.scope === 'Namespaced' ? fieldNamespace : undefined);
  const name = fieldExactMatch(fields, 'metadata.name');
  let hint: ObjectFilter['hint'];
  if (name !== undefined) hint = { field: 'metadata.name', value: name };
  else {
    for (const f of info.indexedFields) {
      const v = fieldExactMatch(fields, f);
      if (v !== undefined) {
        hint = { field: f, value: v };
        break;
      }
    }
  }
  const noLabels = labels.requirements.length === 0;
  const noFields = fields.requirements.length === 0;
  return {
    namespace,
    hint,
    selectsAll: noLabels && noFields,
    matches(obj) {
      if (namespace !== undefined && (obj.metadata.namespace ?? '') !== namespace) return false;
      if (!noLabels && !matchLabels(labels, obj.metadata.labels)) return false;
      return noFields || matchFields(fields, fieldGetter(info, obj));
    },
  };
}
