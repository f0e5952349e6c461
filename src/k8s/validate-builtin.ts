/**
 * A few validations of built-in kinds: the required fields kubectl users meet first, with
 * Kubernetes' field paths and texts. Not the whole of Kubernetes' validation: only what keeps
 * obviously broken objects out and what clients and controllers rely on being present.
 */
import {
  duplicate,
  type FieldError,
  invalid as invalidValue,
  notSupported,
  required,
} from './field-errors.js';
import type { KindValidator, KubeObject } from './types.js';

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => !!v && typeof v === 'object' && !Array.isArray(v);

function checkContainers(spec: Rec, path: string, out: FieldError[]): void {
  const containers = spec.containers;
  if (!Array.isArray(containers) || containers.length === 0) {
    out.push(required(`${path}.containers`));
    return;
  }
  const seen = new Set<string>();
  containers.forEach((c, i) => {
    const at = `${path}.containers[${i}]`;
    if (!isRec(c)) {
      out.push(invalidValue(at, c, 'must be an object'));
      return;
    }
    if (typeof c.name !== 'string' || c.name === '') out.push(required(`${at}.name`));
    else if (seen.has(c.name)) {
      out.push(duplicate(`${at}.name`, c.name));
    } else seen.add(c.name);
    if (typeof c.image !== 'string' || c.image.trim() === '') out.push(required(`${at}.image`));
  });
}

const pods: KindValidator = (obj) => {
  const out: FieldError[] = [];
  if (!isRec(obj.spec)) out.push(required('spec'));
  else checkContainers(obj.spec, 'spec', out);
  return out;
};

/** selector.matchLabels must select the template's labels (Kubernetes' apps validation). */
function checkSelectorMatchesTemplate(spec: Rec, out: FieldError[]): void {
  const selector = spec.selector;
  if (!isRec(selector)) {
    out.push(required('spec.selector'));
    return;
  }
  const matchLabels = isRec(selector.matchLabels) ? selector.matchLabels : {};
  const exprs = Array.isArray(selector.matchExpressions) ? selector.matchExpressions : [];
  if (Object.keys(matchLabels).length === 0 && exprs.length === 0) {
    out.push(invalidValue('spec.selector', selector, 'empty selector is invalid for deployment'));
  }
  const template = isRec(spec.template) ? spec.template : {};
  const meta = isRec(template.metadata) ? template.metadata : {};
  const labels = isRec(meta.labels) ? meta.labels : {};
  for (const [k, v] of Object.entries(matchLabels)) {
    if (labels[k] !== v) {
      out.push(
        invalidValue(
          'spec.template.metadata.labels',
          labels,
          '`selector` does not match template `labels`',
        ),
      );
      return;
    }
  }
}

function workload(needsSelector: boolean): KindValidator {
  return (obj: KubeObject) => {
    const out: FieldError[] = [];
    if (!isRec(obj.spec)) return [required('spec')];
    const spec = obj.spec;
    if (spec.replicas !== undefined) {
      if (!Number.isInteger(spec.replicas) || (spec.replicas as number) < 0) {
        out.push(
          invalidValue('spec.replicas', spec.replicas, 'must be greater than or equal to 0'),
        );
      }
    }
    if (needsSelector) checkSelectorMatchesTemplate(spec, out);
    const template = spec.template;
    if (!isRec(template)) out.push(required('spec.template'));
    else if (!isRec(template.spec)) out.push(required('spec.template.spec'));
    else checkContainers(template.spec, 'spec.template.spec', out);
    return out;
  };
}

const configmaps: KindValidator = (obj) => {
  const out: FieldError[] = [];
  for (const field of ['data', 'binaryData'] as const) {
    const v = obj[field];
    if (v === undefined || v === null) continue;
    if (!isRec(v)) {
      out.push(invalidValue(field, v, 'must be a map of strings'));
      continue;
    }
    for (const [k, val] of Object.entries(v)) {
      if (typeof val !== 'string')
        out.push(invalidValue(`${field}[${k}]`, val, 'must be a string'));
      else if (!/^[-._a-zA-Z0-9]+$/.test(k)) {
        out.push(
          invalidValue(
            field,
            k,
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
          ),
        );
      }
    }
  }
  return out;
};

const secrets: KindValidator = (obj) => {
  const out: FieldError[] = [];
  const data = obj.data;
  if (data !== undefined && data !== null) {
    if (!isRec(data)) out.push(invalidValue('data', data, 'must be a map of base64 strings'));
    else {
      for (const [k, v] of Object.entries(data)) {
        if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v)) {
          out.push(invalidValue(`data[${k}]`, '<secret contents redacted>', 'must be base64'));
        }
      }
    }
  }
  return out;
};

const namespaces: KindValidator = (obj) => {
  const spec = obj.spec;
  if (spec !== undefined && !isRec(spec)) return [invalidValue('spec', spec, 'must be an object')];
  return [];
};

/** A binding's roleRef (required, of an allowed kind, never changed) and its subjects. */
function binding(roleKinds: readonly string[]): KindValidator {
  return (obj, old) => {
    const out: FieldError[] = [];
    const ref = (obj as Rec).roleRef;
    if (!isRec(ref)) out.push(required('roleRef'));
    else {
      if (typeof ref.name !== 'string' || ref.name === '') out.push(required('roleRef.name'));
      if (typeof ref.kind !== 'string' || !roleKinds.includes(ref.kind)) {
        out.push(notSupported('roleRef.kind', ref.kind, roleKinds));
      }
      if (ref.apiGroup !== 'rbac.authorization.k8s.io') {
        out.push(notSupported('roleRef.apiGroup', ref.apiGroup, ['rbac.authorization.k8s.io']));
      }
      const before = old ? (old as Rec).roleRef : undefined;
      if (isRec(before) && JSON.stringify(before) !== JSON.stringify(ref)) {
        out.push(invalidValue('roleRef', ref, 'cannot change roleRef'));
      }
    }
    const subjects = (obj as Rec).subjects;
    if (Array.isArray(subjects)) {
      subjects.forEach((sub, i) => {
        const at = `subjects[${i}]`;
        if (!isRec(sub)) {
          out.push(invalidValue(at, sub, 'must be an object'));
          return;
        }
        if (typeof sub.name !== 'string' || sub.name === '') out.push(required(`${at}.name`));
        if (!['User', 'Group', 'ServiceAccount'].includes(String(sub.kind))) {
          out.push(notSupported(`${at}.kind`, sub.kind, ['ServiceAccount', 'User', 'Group']));
        }
      });
    }
    return out;
  };
}

export const builtinValidators: Record<string, KindValidator> = {
  rolebindings: binding(['Role', 'ClusterRole']),
  clusterrolebindings: binding(['ClusterRole']),
  pods,
  deployments: workload(true),
  replicasets: workload(true),
  statefulsets: workload(true),
  daemonsets: workload(true),
  configmaps,
  secrets,
  namespaces,
};
