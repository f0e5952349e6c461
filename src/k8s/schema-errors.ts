/**
 * ajv's errors as the field errors kube-apiserver reports for CRD objects: kube-openapi's
 * texts (`spec.size in body must be of type integer: "string"`), apimachinery's error
 * types, paths with indices in brackets (`spec.items[0].name`), and one summary error for
 * a failed anyOf/oneOf/not instead of ajv's per-branch details.
 */
import type { ErrorObject } from 'ajv';
import {
  type FieldError,
  invalid,
  notSupported,
  required,
  tooLong,
  tooMany,
  typeInvalid,
} from './field-errors.js';
import { isJsonObject, type JsonValue } from './json.js';

/** `/spec/items/0/name` → `spec.items[0].name`, using the data to tell indices from keys. */
function fieldPath(pointer: string, data: unknown): string {
  if (pointer === '') return '';
  let out = '';
  let cur: unknown = data;
  for (const raw of pointer.slice(1).split('/')) {
    const seg = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(cur)) {
      out += `[${seg}]`;
      cur = cur[Number(seg)];
    } else {
      out += out === '' ? seg : `.${seg}`;
      cur = isJsonObject(cur) ? cur[seg] : undefined;
    }
  }
  return out;
}

/** kube-openapi's name of a value's JSON type (integers apart from other numbers). */
function jsonTypeName(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function sizeOf(v: unknown): number {
  if (Array.isArray(v)) return v.length;
  if (isJsonObject(v)) return Object.keys(v).length;
  return 0;
}

/** Under a combinator, ajv reports each branch's errors; Kubernetes reports one summary. */
function underCombinator(e: ErrorObject, all: ErrorObject[]): boolean {
  return all.some(
    (c) =>
      c !== e &&
      (c.keyword === 'anyOf' || c.keyword === 'oneOf' || c.keyword === 'not') &&
      e.schemaPath.startsWith(`${c.schemaPath}/`),
  );
}

export function ajvToFieldErrors(errors: ErrorObject[], data: unknown): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    if (underCombinator(e, errors)) continue;
    const field = fieldPath(e.instancePath, data);
    const name = field === '' ? '.' : field;
    const value = e.data as JsonValue;
    const limit = (e.params as { limit?: number }).limit;
    switch (e.keyword) {
      case 'required': {
        const missing = (e.params as { missingProperty: string }).missingProperty;
        out.push(required(field === '' ? missing : `${field}.${missing}`));
        break;
      }
      case 'type': {
        const t = (e.params as { type: string | string[] }).type;
        const expected = Array.isArray(t) ? t.join(',') : t;
        const actual = jsonTypeName(value);
        out.push(
          typeInvalid(field, actual, `${name} in body must be of type ${expected}: "${actual}"`),
        );
        break;
      }
      case 'format': {
        const format = (e.params as { format: string }).format;
        out.push(
          typeInvalid(
            field,
            value,
            `${name} in body must be of type ${format}: ${JSON.stringify(value)}`,
          ),
        );
        break;
      }
      case 'enum': {
        const allowed = ((e.params as { allowedValues: unknown[] }).allowedValues ?? []).map((v) =>
          typeof v === 'string' ? v : JSON.stringify(v),
        );
        out.push(notSupported(field, value, allowed));
        break;
      }
      case 'maxLength':
        out.push(tooLong(field, limit ?? -1));
        break;
      case 'maxItems':
      case 'maxProperties':
        out.push(tooMany(field, sizeOf(value), limit ?? -1));
        break;
      case 'anyOf':
      case 'oneOf':
      case 'not':
        out.push(invalid('<nil>', '', combinatorMessage(e, name)));
        break;
      default:
        out.push(invalid(field, isSized(e.keyword) ? sizeOf(value) : value, describe(e, name)));
    }
  }
  return out;
}

function isSized(keyword: string): boolean {
  return keyword === 'minItems' || keyword === 'minProperties';
}

function combinatorMessage(e: ErrorObject, name: string): string {
  if (e.keyword === 'anyOf') return `"${name}" must validate at least one schema (anyOf)`;
  if (e.keyword === 'not') return `"${name}" must not validate the schema (not)`;
  const passing = (e.params as { passingSchemas?: number[] | null }).passingSchemas;
  const found = passing ? `Found ${passing.length} valid alternatives` : 'Found none valid';
  return `"${name}" must validate one and only one schema (oneOf). ${found}`;
}

/** kube-openapi's texts for the remaining keywords. */
function describe(e: ErrorObject, name: string): string {
  const limit = (e.params as { limit?: number }).limit;
  switch (e.keyword) {
    case 'pattern':
      return `${name} in body should match '${(e.params as { pattern: string }).pattern}'`;
    case 'minLength':
      return `${name} in body should be at least ${limit} chars long`;
    case 'minItems':
      return `${name} in body should have at least ${limit} items`;
    case 'minProperties':
      return `${name} in body should have at least ${limit} properties`;
    case 'minimum':
      return `${name} in body should be greater than or equal to ${limit}`;
    case 'exclusiveMinimum':
      return `${name} in body should be greater than ${limit}`;
    case 'maximum':
      return `${name} in body should be less than or equal to ${limit}`;
    case 'exclusiveMaximum':
      return `${name} in body should be less than ${limit}`;
    case 'multipleOf':
      return `${name} in body should be a multiple of ${(e.params as { multipleOf: number }).multipleOf}`;
    case 'uniqueItems':
      return `${name} in body shouldn't contain duplicates`;
    default:
      return `${name} in body ${e.message ?? 'is invalid'}`;
  }
}
