/**
 * CustomResourceDefinitions (apiextensions.k8s.io/v1) as objects: a CRD is checked (names,
 * scope, versions, schemas; `crdErrors`), gets the status the apiextensions controllers would
 * give it (NamesAccepted and Established conditions, acceptedNames, storedVersions;
 * `crdStatus`), and a stored one becomes one served resource per served version
 * (`infosFromCrd`), whose objects are validated against the version's openAPIV3Schema (422
 * with a cause per field). Installing them in a server's registry as CRDs are written and
 * seen is src/api/k8s/crd-sync.ts's.
 */

import { fieldAt } from './builtins.js';
import { compileSchema } from './crd-schema.js';
import { invalidObject, KubeLibError } from './errors.js';
import { type FieldError, forbidden, invalid, required } from './field-errors.js';
import { timestamp } from './meta.js';
import { validateDns1123Label, validateDns1123Subdomain } from './names.js';
import { AGE_COLUMN, humanDuration } from './printers.js';
import type { KindRegistry } from './registry.js';
import { structuralSchemaErrors } from './schema.js';
import type { KubeObject, Printer, ResourceInfo, TableColumn } from './types.js';
import { ALL_VERBS } from './types.js';

export const CRD_REF = 'apiextensions.k8s.io/customresourcedefinitions';

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => !!v && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const strList = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];

interface CrdNames {
  plural: string;
  singular: string;
  kind: string;
  listKind: string;
  shortNames: string[];
  categories: string[];
}

function namesOf(spec: Rec): CrdNames {
  const n = isRec(spec.names) ? spec.names : {};
  const kind = str(n.kind);
  return {
    plural: str(n.plural),
    singular: str(n.singular) || kind.toLowerCase(),
    kind,
    listKind: str(n.listKind) || `${kind}List`,
    shortNames: strList(n.shortNames),
    categories: strList(n.categories),
  };
}

function checkNames(crd: KubeObject, spec: Rec, errs: FieldError[]): void {
  const group = str(spec.group);
  const names = namesOf(spec);
  if (group === '') errs.push(required('spec.group'));
  else if (!group.includes('.'))
    errs.push(invalid('spec.group', group, 'should be a domain with at least one dot'));
  else for (const m of validateDns1123Subdomain(group)) errs.push(invalid('spec.group', group, m));
  if (names.plural === '') errs.push(required('spec.names.plural'));
  else
    for (const m of validateDns1123Label(names.plural))
      errs.push(invalid('spec.names.plural', names.plural, m));
  if (names.kind === '') errs.push(required('spec.names.kind'));
  else if (!/^[A-Za-z][A-Za-z0-9]*$/.test(names.kind)) {
    errs.push(
      invalid(
        'spec.names.kind',
        names.kind,
        'may have mixed case, but should otherwise match: ^[a-z][a-z0-9]*$',
      ),
    );
  }
  if (names.plural && group && crd.metadata.name !== `${names.plural}.${group}`) {
    errs.push(
      invalid('metadata.name', crd.metadata.name ?? '', 'must be spec.names.plural+"."+spec.group'),
    );
  }
  const scope = str(spec.scope);
  if (scope !== 'Namespaced' && scope !== 'Cluster') {
    errs.push(
      scope === ''
        ? required('spec.scope')
        : invalid('spec.scope', scope, 'must be Namespaced or Cluster'),
    );
  }
}

function checkVersions(spec: Rec, errs: FieldError[]): void {
  const versions = Array.isArray(spec.versions) ? spec.versions : [];
  if (versions.length === 0) {
    errs.push(required('spec.versions', 'must have exactly one version marked as storage version'));
    return;
  }
  let storage = 0;
  const seen = new Set<string>();
  versions.forEach((v, i) => {
    const at = `spec.versions[${i}]`;
    if (!isRec(v)) {
      errs.push(invalid(at, v, 'must be an object'));
      return;
    }
    const name = str(v.name);
    if (name === '') errs.push(required(`${at}.name`));
    else for (const m of validateDns1123Label(name)) errs.push(invalid(`${at}.name`, name, m));
    if (seen.has(name)) errs.push(invalid(`${at}.name`, name, 'must be unique'));
    seen.add(name);
    if (v.storage === true) storage++;
    const schema = isRec(v.schema) ? v.schema.openAPIV3Schema : undefined;
    if (!isRec(schema)) errs.push(required(`${at}.schema.openAPIV3Schema`));
    else {
      const path = `${at}.schema.openAPIV3Schema`;
      const structural = structuralSchemaErrors(schema, path);
      if (structural.length > 0) errs.push(...structural);
      else {
        try {
          compileSchema(schema, path);
        } catch (e) {
          errs.push(invalid(path, '', e instanceof KubeLibError ? e.statusMessage : String(e)));
        }
      }
    }
  });
  if (storage !== 1) {
    errs.push(
      invalid('spec.versions', '', 'must have exactly one version marked as storage version'),
    );
  }
}

/** The CRD's errors, including immutable fields on update, and a name the server serves itself. */
export function crdErrors(
  registry: KindRegistry,
  crd: KubeObject,
  old: KubeObject | undefined,
): FieldError[] {
  const errs: FieldError[] = [];
  if (!isRec(crd.spec)) return [required('spec')];
  const spec = crd.spec;
  checkNames(crd, spec, errs);
  checkVersions(spec, errs);
  const group = str(spec.group);
  const plural = namesOf(spec).plural;
  if (registry.isBuiltin(group, plural)) {
    errs.push(invalid('spec.group', group, `${plural}.${group} is served by the server itself`));
  }
  if (old && isRec(old.spec)) {
    for (const f of ['group', 'scope'] as const) {
      if (old.spec[f] !== spec[f])
        errs.push(invalid(`spec.${f}`, spec[f] ?? '', 'field is immutable'));
    }
    if (namesOf(old.spec).plural !== plural) {
      errs.push(forbidden('spec.names.plural', 'field is immutable'));
    }
  }
  return errs;
}

function condition(type: string, reason: string, message: string, at: string, old: Rec[]): Rec {
  const prev = old.find((c) => c.type === type && c.status === 'True');
  return {
    type,
    status: 'True',
    lastTransitionTime: str(prev?.lastTransitionTime) || at,
    reason,
    message,
  };
}

/** Status as the apiextensions controllers would leave it once they ran. */
export function crdStatus(crd: KubeObject, old: KubeObject | undefined, nowMs: number): Rec {
  const spec = crd.spec as Rec;
  const names = namesOf(spec);
  const oldStatus = isRec(old?.status) ? (old?.status as Rec) : {};
  const oldConds = Array.isArray(oldStatus.conditions) ? (oldStatus.conditions as Rec[]) : [];
  const at = timestamp(nowMs);
  const versions = (spec.versions as Rec[]).filter(isRec);
  const storage = str(versions.find((v) => v.storage === true)?.name);
  const stored = new Set([...strList(oldStatus.storedVersions), storage]);
  return {
    conditions: [
      condition('NamesAccepted', 'NoConflicts', 'no conflicts found', at, oldConds),
      condition(
        'Established',
        'InitialNamesAccepted',
        'the initial names have been accepted',
        at,
        oldConds,
      ),
    ],
    acceptedNames: {
      plural: names.plural,
      singular: names.singular,
      kind: names.kind,
      listKind: names.listKind,
      ...(names.shortNames.length > 0 ? { shortNames: names.shortNames } : {}),
      ...(names.categories.length > 0 ? { categories: names.categories } : {}),
    },
    storedVersions: [...stored].filter((v) => v !== ''),
  };
}

/** additionalPrinterColumns with simple JSONPaths (`.spec.size`). */
function printerOf(version: Rec): Printer {
  const cols = Array.isArray(version.additionalPrinterColumns)
    ? version.additionalPrinterColumns.filter(isRec)
    : [];
  const extra = cols.map((c) => ({
    column: {
      name: str(c.name),
      type: (['integer', 'number', 'boolean', 'date'].includes(str(c.type))
        ? str(c.type)
        : 'string') as TableColumn['type'],
      format: str(c.format),
      description: str(c.description),
      priority: typeof c.priority === 'number' ? c.priority : 0,
    },
    path: str(c.jsonPath).replace(/^\./, ''),
  }));
  return {
    columns: [...extra.map((e) => e.column), AGE_COLUMN],
    cells(obj, nowMs) {
      const values = extra.map((e) => {
        const v = fieldAt(obj, e.path);
        if (e.column.type === 'date' && v) {
          const t = Date.parse(v);
          return Number.isNaN(t) ? v : humanDuration(nowMs - t);
        }
        return v;
      });
      const created = Date.parse(obj.metadata.creationTimestamp ?? '');
      return [...values, Number.isNaN(created) ? '<unknown>' : humanDuration(nowMs - created)];
    },
  };
}

/** One served resource per served version of a (valid, stored) CRD. */
export function infosFromCrd(crd: KubeObject): ResourceInfo[] {
  if (!isRec(crd.spec)) return [];
  const spec = crd.spec;
  const names = namesOf(spec);
  const group = str(spec.group);
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isRec) : [];
  const out: ResourceInfo[] = [];
  for (const v of versions) {
    if (v.served !== true) continue;
    const schema =
      isRec(v.schema) && isRec(v.schema.openAPIV3Schema) ? v.schema.openAPIV3Schema : {};
    const compiled = compileSchema(schema);
    const subresources = isRec(v.subresources) ? v.subresources : {};
    const selectable = Array.isArray(v.selectableFields) ? v.selectableFields.filter(isRec) : [];
    const fields: Record<string, (o: KubeObject) => string> = {};
    for (const f of selectable) {
      const path = str(f.jsonPath).replace(/^\./, '');
      if (path) fields[path] = (o) => fieldAt(o, path);
    }
    out.push({
      group,
      version: str(v.name),
      resource: names.plural,
      kind: names.kind,
      listKind: names.listKind,
      singular: names.singular,
      scope: spec.scope === 'Cluster' ? 'Cluster' : 'Namespaced',
      shortNames: names.shortNames,
      categories: names.categories,
      verbs: ALL_VERBS,
      statusSubresource: isRec(subresources.status),
      scaleSubresource: false,
      generation: true,
      strategicMerge: false,
      fields,
      indexedFields: [],
      nameRule: 'subdomain',
      validate: (obj) => compiled.validate(obj),
      schema: compiled,
      mergeSchema: compiled.mergeSchema,
      crd: crd.metadata.name ?? '',
      openApiSchema: schema,
      printer: printerOf(v),
    });
  }
  return out;
}

/** Installs (or removes) a CRD's resources in `registry` from its stored object. */
export function installCrd(registry: KindRegistry, crd: KubeObject, revision: number): void {
  const name = crd.metadata.name ?? '';
  try {
    registry.setCrd(name, revision, infosFromCrd(crd));
  } catch {
    // A stored CRD whose schema no longer compiles serves nothing rather than failing.
    registry.setCrd(name, revision, []);
  }
}

/** Throws the 422 Kubernetes answers for an invalid CRD; otherwise sets its status. */
export function prepareCrd(
  registry: KindRegistry,
  crd: KubeObject,
  old: KubeObject | undefined,
  nowMs: number,
): void {
  const errs = crdErrors(registry, crd, old);
  if (errs.length > 0) {
    throw invalidObject(
      'apiextensions.k8s.io',
      'CustomResourceDefinition',
      crd.metadata.name ?? '',
      errs,
    );
  }
  crd.status = crdStatus(crd, old, nowMs);
}
