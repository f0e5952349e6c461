/**
 * CustomResourceDefinition schemas: `compileCrdSchema(openAPIV3Schema)` checks that the
 * schema is structural, compiles its value validations with ajv, and returns a checker that
 * reports field errors the way kube-apiserver does (`spec.replicas: Invalid value: "string":
 * spec.replicas in body must be of type integer: "string"`), finds and prunes unknown
 * fields, applies defaults, and exposes the schema's merge metadata for server-side apply.
 *
 * The order kube-apiserver follows on a write, and the server should too: prune unknown
 * fields (or reject them under fieldValidation=Strict), apply defaults, validate.
 *
 * Not covered: CEL rules (`x-kubernetes-validations`) are accepted and ignored; validation
 * ratcheting on update is not done (every write is validated in full).
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { CRD_FORMATS, normalizeFormat } from './crd-formats.js';
import {
  applyDefaults,
  mergeSchemaOf,
  pruneUnknown,
  type SchemaNode,
  unknownFieldPaths,
} from './crd-schema-walk.js';
import { KubeLibError } from './errors.js';
import {
  aggregateMessages,
  type FieldError,
  fieldErrorString,
  forbidden,
  invalid,
  notSupported,
  required,
  toCause,
} from './field-errors.js';
import { isJsonObject, type JsonValue } from './json.js';
import type { MapSchema } from './merge-schema.js';
import { ajvToFieldErrors } from './schema-errors.js';

export type { SchemaNode } from './crd-schema-walk.js';

export interface CrdSchemaOptions {
  /** Where the schema sits in its CRD, for schema errors (default `openAPIV3Schema`). */
  schemaPath?: string;
}

export interface CompiledCrdSchema {
  /** Field errors of an object (after pruning and defaulting); empty when valid. */
  validate(obj: unknown): FieldError[];
  /** Dotted paths (`spec.bogus`, `spec.items[0].x`) of fields the schema does not know. */
  unknownFields(obj: unknown): string[];
  /** Removes unknown fields in place; returns their paths. */
  prune(obj: unknown): string[];
  /** Applies `default`s in place (and drops nulls the schema does not allow). */
  applyDefaults(obj: unknown): void;
  /** List and map merge metadata (x-kubernetes-list-type, -map-type) for apply. */
  readonly mergeSchema: MapSchema;
}

const TYPES = ['array', 'boolean', 'integer', 'number', 'object', 'string'];

/**
 * The structural-schema rules a CRD schema must meet (a subset of Kubernetes' checks, with
 * its wording): every specified field has a type, arrays have items, properties and
 * additionalProperties exclude each other, no $ref, no uniqueItems, no additionalProperties
 * false, map lists name their keys.
 */
export function structuralSchemaErrors(schema: unknown, path = 'openAPIV3Schema'): FieldError[] {
  const errs: FieldError[] = [];
  if (!isJsonObject(schema)) return [required(path, '')];
  checkNode(schema as SchemaNode, path, true, errs);
  if (schema.type !== 'object')
    errs.push(invalid(`${path}.type`, schema.type ?? '', 'must be object at the root'));
  return errs;
}

function checkNode(node: SchemaNode, path: string, root: boolean, errs: FieldError[]): void {
  const intOrString = node['x-kubernetes-int-or-string'] === true;
  const preserve = node['x-kubernetes-preserve-unknown-fields'] === true;
  if (node.type === undefined || node.type === '') {
    if (!intOrString && !preserve && !root) {
      errs.push(required(`${path}.type`, 'must not be empty for specified object fields'));
    }
  } else if (!TYPES.includes(node.type)) {
    errs.push(notSupported(`${path}.type`, node.type, TYPES));
  }
  if (node.$ref !== undefined) errs.push(forbidden(`${path}.$ref`, '$ref is not supported'));
  if (node.uniqueItems === true) {
    errs.push(
      forbidden(
        `${path}.uniqueItems`,
        'uniqueItems cannot be set to true since the runtime complexity becomes quadratic',
      ),
    );
  }
  if (node.additionalProperties === false) {
    errs.push(
      forbidden(`${path}.additionalProperties`, 'additionalProperties cannot be set to false'),
    );
  }
  if (
    node.properties !== undefined &&
    node.additionalProperties !== undefined &&
    node.additionalProperties !== true
  ) {
    errs.push(
      forbidden(
        `${path}.additionalProperties`,
        'additionalProperties and properties are mutual exclusive',
      ),
    );
  }
  if (node.type === 'array' && !isJsonObject(node.items)) {
    errs.push(required(`${path}.items`, 'must be specified'));
  }
  if (
    node['x-kubernetes-list-type'] === 'map' &&
    !(node['x-kubernetes-list-map-keys']?.length ?? 0)
  ) {
    errs.push(
      required(
        `${path}.x-kubernetes-list-map-keys`,
        'must not be empty if x-kubernetes-list-type is map',
      ),
    );
  }
  for (const [k, p] of Object.entries(node.properties ?? {})) {
    if (isJsonObject(p)) checkNode(p as SchemaNode, `${path}.properties[${k}]`, false, errs);
  }
  if (isJsonObject(node.additionalProperties)) {
    checkNode(node.additionalProperties as SchemaNode, `${path}.additionalProperties`, false, errs);
  }
  if (isJsonObject(node.items)) checkNode(node.items as SchemaNode, `${path}.items`, false, errs);
}

// --- conversion to JSON Schema for ajv -----------------------------------------------------------

const COPIED = [
  'enum',
  'pattern',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'multipleOf',
  'required',
] as const;

/**
 * The value validations of a node as draft-07 JSON Schema: OpenAPI's boolean
 * exclusiveMinimum/Maximum become numbers, int-or-string becomes two types, unknown formats
 * are dropped, the resource root's metadata is left to the server's ObjectMeta checks.
 */
function toJsonSchema(node: SchemaNode, root: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (node['x-kubernetes-int-or-string'] === true) out.type = ['integer', 'string'];
  else if (node.type) out.type = node.type;
  if (node.nullable === true && out.type !== undefined) out.nullable = true;
  for (const k of COPIED) if (node[k] !== undefined) out[k] = node[k];
  if (typeof node.minimum === 'number') {
    if (node.exclusiveMinimum === true) out.exclusiveMinimum = node.minimum;
    else out.minimum = node.minimum;
  }
  if (typeof node.maximum === 'number') {
    if (node.exclusiveMaximum === true) out.exclusiveMaximum = node.maximum;
    else out.maximum = node.maximum;
  }
  const format = normalizeFormat(node.format);
  if (format !== undefined && node.type === 'string') out.format = format;
  if (node.properties) {
    const props: Record<string, unknown> = {};
    for (const [k, p] of Object.entries(node.properties)) {
      if (root && k === 'metadata') continue;
      props[k] = toJsonSchema(p, false);
    }
    out.properties = props;
  }
  if (root && Array.isArray(out.required)) {
    out.required = (out.required as string[]).filter((k) => k !== 'metadata');
  }
  if (isJsonObject(node.additionalProperties)) {
    out.additionalProperties = toJsonSchema(node.additionalProperties as SchemaNode, false);
  }
  if (node.items) out.items = toJsonSchema(node.items, false);
  for (const k of ['allOf', 'anyOf', 'oneOf'] as const) {
    const list = node[k];
    if (Array.isArray(list)) out[k] = list.map((s) => toJsonSchema(s as SchemaNode, false));
  }
  if (isJsonObject(node.not)) out.not = toJsonSchema(node.not as SchemaNode, false);
  if (node['x-kubernetes-embedded-resource'] === true) {
    // apiVersion and kind are checked by embeddedResourceErrors with Kubernetes' texts.
    delete out.required;
  }
  return out;
}

function newAjv(): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false, verbose: true, validateFormats: true });
  for (const [name, check] of Object.entries(CRD_FORMATS))
    ajv.addFormat(name, { type: 'string', validate: check });
  return ajv;
}

export function compileCrdSchema(
  openAPIV3Schema: unknown,
  options: CrdSchemaOptions = {},
): CompiledCrdSchema {
  const path = options.schemaPath ?? 'openAPIV3Schema';
  const errs = structuralSchemaErrors(openAPIV3Schema, path);
  let validator: ValidateFunction | undefined;
  if (errs.length === 0) {
    try {
      // One ajv per schema: ajv caches every schema it compiled, and CRDs come and go.
      validator = newAjv().compile(toJsonSchema(openAPIV3Schema as SchemaNode, true));
    } catch (e) {
      errs.push(invalid(path, '', e instanceof Error ? e.message : String(e)));
    }
  }
  if (errs.length > 0 || validator === undefined) {
    throw new KubeLibError(
      'Invalid',
      `invalid schema: ${aggregateMessages(errs.map(fieldErrorString))}`,
      {
        causes: errs.map(toCause),
      },
    );
  }
  const root = openAPIV3Schema as SchemaNode;
  const check = validator;
  return {
    validate: (obj) => validateObject(check, root, obj),
    unknownFields: (obj) => unknownFieldPaths(obj as JsonValue, root),
    prune: (obj) => pruneUnknown(obj as JsonValue, root),
    applyDefaults: (obj) => applyDefaults(obj as JsonValue, root),
    mergeSchema: mergeSchemaOf(root) as MapSchema,
  };
}

function validateObject(check: ValidateFunction, root: SchemaNode, obj: unknown): FieldError[] {
  const errs: FieldError[] = [];
  if (!check(obj)) errs.push(...ajvToFieldErrors(check.errors ?? [], obj));
  errs.push(...embeddedResourceErrors(obj as JsonValue, root, ''));
  return errs;
}

/** Objects marked x-kubernetes-embedded-resource must carry apiVersion and kind. */
function embeddedResourceErrors(
  value: JsonValue,
  node: SchemaNode | undefined,
  path: string,
): FieldError[] {
  if (node === undefined) return [];
  const errs: FieldError[] = [];
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      errs.push(...embeddedResourceErrors(v, node.items, `${path}[${i}]`));
    });
    return errs;
  }
  if (!isJsonObject(value)) return errs;
  if (node['x-kubernetes-embedded-resource'] === true) {
    for (const key of ['apiVersion', 'kind']) {
      const v = value[key];
      const p = path === '' ? key : `${path}.${key}`;
      if (v === undefined) errs.push(required(p, 'must not be empty'));
      else if (typeof v !== 'string') errs.push(invalid(p, v, 'must be a string'));
      else if (v === '') errs.push(invalid(p, v, 'must not be empty'));
    }
  }
  const additional =
    typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined;
  for (const [k, v] of Object.entries(value)) {
    const child = node.properties?.[k] ?? additional;
    if (child) errs.push(...embeddedResourceErrors(v, child, path === '' ? k : `${path}.${k}`));
  }
  return errs;
}

// --- fieldValidation texts -----------------------------------------------------------------------------

/** `unknown field "spec.bogus"`: one Warning header text per path (fieldValidation=Warn). */
export function unknownFieldWarnings(paths: readonly string[]): string[] {
  return paths.map((p) => `unknown field "${p}"`);
}

/**
 * The 400 message of fieldValidation=Strict: `Widget in version "v1" cannot be handled as a
 * Widget: strict decoding error: unknown field "spec.bogus", unknown field "spec.x"`.
 */
export function strictDecodingMessage(
  kind: string,
  version: string,
  paths: readonly string[],
): string {
  return `${kind} in version "${version}" cannot be handled as a ${kind}: strict decoding error: ${unknownFieldWarnings(paths).join(', ')}`;
}
