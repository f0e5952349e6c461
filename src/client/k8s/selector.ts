/**
 * Label selectors on the client side: a LabelSelector object (matchLabels and
 * matchExpressions In / NotIn / Exists / DoesNotExist) tested against labels, and its text
 * form for a list's `labelSelector`. An empty selector matches everything; a missing one
 * (undefined) matches nothing, as Kubernetes reads them for workloads.
 */

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export function selectorMatches(
  sel: LabelSelector | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (!sel) return false;
  const l = labels ?? {};
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const r of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(l, r.key);
    const v = l[r.key];
    switch (r.operator) {
      case 'In':
        if (!has || !(r.values ?? []).includes(v as string)) return false;
        break;
      case 'NotIn':
        if (has && (r.values ?? []).includes(v as string)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** True when the selector has no requirement at all (it selects everything). */
export function selectorIsEmpty(sel: LabelSelector | undefined): boolean {
  return (
    sel !== undefined &&
    Object.keys(sel.matchLabels ?? {}).length === 0 &&
    (sel.matchExpressions ?? []).length === 0
  );
}

/** The selector as a list query's `labelSelector` text. */
export function selectorString(sel: LabelSelector): string {
  const parts = Object.entries(sel.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const r of sel.matchExpressions ?? []) {
    const vals = (r.values ?? []).join(',');
    if (r.operator === 'In') parts.push(`${r.key} in (${vals})`);
    else if (r.operator === 'NotIn') parts.push(`${r.key} notin (${vals})`);
    else if (r.operator === 'Exists') parts.push(r.key);
    else parts.push(`!${r.key}`);
  }
  return parts.join(',');
}
