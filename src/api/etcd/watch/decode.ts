/**
 * One WatchRequest of the JSON watch stream (HTTP body value or websocket message) from its
 * text: the envelope (which of create, cancel and progress it holds) is read here, and each
 * request's fields are decoded by the JSON API's own decoders (../decode.ts, schemas in
 * ../schema.ts), the ones the gRPC face's Watch uses too.
 *
 * Field names follow the gateway's JSON mapping: proto or JSON names, null as unset. A field
 * etcd does not know is refused (ERR_UNKNOWN_FIELD, naming it by its path in the request, e.g.
 * `create_request.colour`). A WatchRequest with none of the three requests, or `null`, is
 * ignored, as etcd ignores it; with more than one, create wins, then cancel.
 */
import { EtceteraError } from '../../../errors.js';
import { checkJsonDepth } from '../../body.js';
import { decodeWatchCancel, decodeWatchCreate, get as field } from '../decode.js';
import { checkShape, fieldsOf, type SchemaName } from '../schema.js';
import type { EtcdWatchRequest } from './session.js';

type Obj = Record<string, unknown>;

/** The envelope's members and the schema of each. */
const REQUESTS = [
  ['create_request', 'watchCreate'],
  ['cancel_request', 'watchCancel'],
  ['progress_request', 'empty'],
] as const satisfies readonly (readonly [string, SchemaName])[];

/** One WatchRequest from its JSON text. Throws ERR_NESTING_TOO_DEEP, ERR_MALFORMED_JSON, ERR_BAD_FIELD, ERR_UNKNOWN_FIELD. */
export function decodeWatchRequest(text: string): EtcdWatchRequest {
  let body: unknown;
  checkJsonDepth(text);
  try {
    body = JSON.parse(text);
  } catch (e) {
    throw new EtceteraError('ERR_MALFORMED_JSON', { detail: (e as Error).message }, { cause: e });
  }
  if (body === null) return { type: 'none' };
  if (isObject(body)) {
    refuseUnknown('', body, 'watchRequest');
    for (const [name, schema] of REQUESTS) {
      const inner = field(body, name);
      if (isObject(inner)) refuseUnknown(name, inner, schema);
    }
  }
  checkShape('watchRequest', body);
  const o = body as Obj;
  const create = field(o, 'create_request');
  if (create !== undefined) return { type: 'create', create: decodeWatchCreate(create) };
  const cancel = field(o, 'cancel_request');
  if (cancel !== undefined) return { type: 'cancel', watchId: decodeWatchCancel(cancel) };
  if (field(o, 'progress_request') !== undefined) return { type: 'progress' };
  return { type: 'none' };
}

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function refuseUnknown(path: string, o: Obj, schema: SchemaName): void {
  const known = fieldsOf(schema);
  for (const k of Object.keys(o)) {
    if (known.has(k)) continue;
    throw new EtceteraError('ERR_UNKNOWN_FIELD', { detail: `${path ? `${path}.` : ''}${k}` });
  }
}
