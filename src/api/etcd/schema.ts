/**
 * One small JSON schema per request message of etcd's v3 API, compiled once with ajv.
 *
 * The schemas check what JSON alone can show: the body is an object, every field is known
 * (etcd 3.4 silently ignores unknown fields; etcetera refuses them so a typo never goes
 * unnoticed), and each field has a JSON type its wire form allows. Base64, int64 ranges
 * and enum numbers are checked by the decoders in decode.ts, which also build the store's
 * command types. Every field may be null (protobuf's JSON mapping reads null as "unset").
 *
 * Field names: the gateway accepts both a field's proto name (`range_end`) and its JSON
 * name (`rangeEnd`), so both are listed.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { EtceteraError } from '../../errors.js';
import { badField } from './wire.js';

type FieldSchema = Record<string, unknown>;

const BYTES: FieldSchema = { type: ['string', 'null'], description: 'base64 bytes' };
const INT64: FieldSchema = {
  type: ['integer', 'string', 'null'],
  description: 'an int64 (a JSON integer or a decimal string)',
};
const UINT64: FieldSchema = {
  type: ['integer', 'string', 'null'],
  description: 'a uint64 (a JSON integer or a decimal string)',
};
const BOOL: FieldSchema = { type: ['boolean', 'null'], description: 'a boolean' };
const OBJECT: FieldSchema = { type: ['object', 'null'], description: 'an object' };
const enumOf = (names: readonly string[]): FieldSchema => ({
  type: ['string', 'integer', 'null'],
  description: `one of ${names.join(', ')} (or its number)`,
});
const arrayOf = (items: FieldSchema): FieldSchema => ({
  type: ['array', 'null'],
  items,
  description: 'an array',
});

export const SORT_ORDERS = ['NONE', 'ASCEND', 'DESCEND'] as const;
export const SORT_TARGETS = ['KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE'] as const;
export const COMPARE_RESULTS = ['EQUAL', 'GREATER', 'LESS', 'NOT_EQUAL'] as const;
export const COMPARE_TARGETS = ['VERSION', 'CREATE', 'MOD', 'VALUE', 'LEASE'] as const;
export const WATCH_FILTERS = ['NOPUT', 'NODELETE'] as const;
export const ALARM_ACTIONS = ['GET', 'ACTIVATE', 'DEACTIVATE'] as const;
export const ALARM_TYPE_NAMES = ['NONE', 'NOSPACE', 'CORRUPT'] as const;

/** protobuf's JSON name of a proto field: lowerCamelCase of the snake_case name. */
export function jsonName(field: string): string {
  return field.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function message(fields: Record<string, FieldSchema>): FieldSchema {
  const properties: Record<string, FieldSchema> = {};
  for (const [name, schema] of Object.entries(fields)) {
    properties[name] = schema;
    properties[jsonName(name)] = schema;
  }
  return { type: 'object', properties, additionalProperties: false, description: 'a JSON object' };
}

const RANGE = message({
  key: BYTES,
  range_end: BYTES,
  limit: INT64,
  revision: INT64,
  sort_order: enumOf(SORT_ORDERS),
  sort_target: enumOf(SORT_TARGETS),
  serializable: BOOL,
  keys_only: BOOL,
  count_only: BOOL,
  min_mod_revision: INT64,
  max_mod_revision: INT64,
  min_create_revision: INT64,
  max_create_revision: INT64,
});
const PUT = message({
  key: BYTES,
  value: BYTES,
  lease: INT64,
  prev_kv: BOOL,
  ignore_value: BOOL,
  ignore_lease: BOOL,
});
const DELETE_RANGE = message({ key: BYTES, range_end: BYTES, prev_kv: BOOL });
const COMPARE = message({
  result: enumOf(COMPARE_RESULTS),
  target: enumOf(COMPARE_TARGETS),
  key: BYTES,
  version: INT64,
  create_revision: INT64,
  mod_revision: INT64,
  value: BYTES,
  lease: INT64,
  range_end: BYTES,
});
/** A nested `request_txn` is checked against TXN when the decoder descends into it. */
const REQUEST_OP = message({
  request_range: { ...RANGE, type: ['object', 'null'] },
  request_put: { ...PUT, type: ['object', 'null'] },
  request_delete_range: { ...DELETE_RANGE, type: ['object', 'null'] },
  request_txn: OBJECT,
});
const TXN = message({
  compare: arrayOf({ ...COMPARE, type: ['object', 'null'] }),
  success: arrayOf({ ...REQUEST_OP, type: ['object', 'null'] }),
  failure: arrayOf({ ...REQUEST_OP, type: ['object', 'null'] }),
});

const WATCH_CREATE = message({
  key: BYTES,
  range_end: BYTES,
  start_revision: INT64,
  progress_notify: BOOL,
  filters: arrayOf({
    type: ['string', 'integer'],
    description: `one of ${WATCH_FILTERS.join(', ')} (or its number)`,
  }),
  prev_kv: BOOL,
  watch_id: INT64,
  fragment: BOOL,
});

const SCHEMAS = {
  range: RANGE,
  put: PUT,
  deleteRange: DELETE_RANGE,
  txn: TXN,
  compaction: message({ revision: INT64, physical: BOOL }),
  leaseGrant: message({ TTL: INT64, ID: INT64 }),
  leaseId: message({ ID: INT64 }),
  leaseTimeToLive: message({ ID: INT64, keys: BOOL }),
  empty: message({}),
  /** etcd 3.5 added `linearizable` to MemberListRequest; 3.4 has no fields. */
  memberList: message({ linearizable: BOOL }),
  memberAdd: message({
    peerURLs: arrayOf({ type: 'string', description: 'a URL' }),
    isLearner: BOOL,
  }),
  memberId: message({ ID: UINT64 }),
  /** One message of the watch stream: at most one of its requests is read (create first). */
  watchRequest: message({
    create_request: OBJECT,
    cancel_request: OBJECT,
    progress_request: OBJECT,
  }),
  watchCreate: WATCH_CREATE,
  watchCancel: message({ watch_id: INT64 }),
  memberUpdate: message({
    ID: UINT64,
    peerURLs: arrayOf({ type: 'string', description: 'a URL' }),
  }),
  alarm: message({
    action: enumOf(ALARM_ACTIONS),
    memberID: UINT64,
    alarm: enumOf(ALARM_TYPE_NAMES),
  }),
  hashKV: message({ revision: INT64 }),
} as const;

export type SchemaName = keyof typeof SCHEMAS;

const ajv = new Ajv({
  allErrors: false,
  verbose: true,
  strict: true,
  allowUnionTypes: true,
  coerceTypes: false,
});
const validators = Object.fromEntries(
  Object.entries(SCHEMAS).map(([name, schema]) => [name, ajv.compile(schema)]),
) as Record<SchemaName, ValidateFunction>;

/** The field names a message's schema knows, proto and JSON names both. */
export function fieldsOf(name: SchemaName): ReadonlySet<string> {
  const properties = (SCHEMAS[name] as { properties: Record<string, unknown> }).properties;
  return new Set(Object.keys(properties));
}

/** Checks a parsed body (or nested message) against a schema; throws the first problem. */
export function checkShape(name: SchemaName, value: unknown, at = ''): void {
  const validate = validators[name];
  if (validate(value)) return;
  const e = validate.errors?.[0];
  throw e ? shapeError(e, at) : badField(at, 'invalid');
}

function shapeError(e: ErrorObject, at: string): EtceteraError {
  const path = `${at}${e.instancePath}`.replace(/^\//, '').replaceAll('/', '.');
  if (e.keyword === 'additionalProperties') {
    const field = (e.params as { additionalProperty: string }).additionalProperty;
    return new EtceteraError('ERR_UNKNOWN_FIELD', {
      detail: `${JSON.stringify(field)}${path ? ` in ${path}` : ''}`,
    });
  }
  const described = (e.parentSchema as { description?: string } | undefined)?.description;
  const expected = described ?? 'another type';
  return badField(path, `expected ${expected}, got ${jsonType(e.data)}`);
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string')
    return `string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'number') return `number ${v}`;
  return `${typeof v === 'object' ? 'an object' : typeof v}`;
}
