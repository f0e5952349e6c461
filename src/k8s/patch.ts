/**
 * JSON merge patch (RFC 7386) and JSON patch (RFC 6902) with kube-apiserver's error mapping:
 *
 * - a merge patch body that is `null` is 400 `Invalid JSON Patch`;
 * - a JSON patch body that is not a list of objects is 400 with Go's decoding message;
 * - more than 10,000 operations is 413;
 * - an operation that cannot apply (a failed `test`, a missing path, a bad op) is 422 with
 *   Kubernetes' generic text (the precise reason stays on the error for logs).
 *
 * Neither function mutates its arguments.
 */
import jsonpatch from 'fast-json-patch';
import { badRequest, tooLarge, unprocessable } from './errors.js';
import { cloneJson, isJsonObject, type JsonMap, type JsonValue } from './json.js';

/**
 * RFC 7386: an object patch merges key by key (null deletes, objects recurse into objects,
 * anything else replaces); a non-object patch replaces the target wholesale.
 */
export function applyMergePatch(target: unknown, patch: unknown): JsonValue {
  if (!isJsonObject(patch)) return cloneJson(patch as JsonValue);
  const out: JsonMap = isJsonObject(target) ? { ...target } : {};
  for (const key of Object.keys(patch)) {
    const p = patch[key] as JsonValue;
    if (p === null) delete out[key];
    else out[key] = applyMergePatch(out[key], p);
  }
  // Values copied from the target by the spread are shared; copy them so the result is
  // independent of the input (callers mutate results freely).
  for (const key of Object.keys(out)) {
    if (!Object.hasOwn(patch, key)) out[key] = cloneJson(out[key] as JsonValue);
  }
  return out;
}

/**
 * A merge patch body applied to an object as kube-apiserver does: `null` is rejected; the
 * result must still be an object (else 422, the object cannot be decoded).
 */
export function mergePatchObject(target: JsonMap, patch: unknown): JsonMap {
  if (patch === null || patch === undefined) throw badRequest('Invalid JSON Patch');
  const result = applyMergePatch(target, patch);
  if (!isJsonObject(result)) {
    throw unprocessable(`a merge patch must be a JSON object, got ${goJsonType(patch)}`);
  }
  return result;
}

/** Kubernetes refuses JSON patches with more operations than this (413). */
export const MAX_JSON_PATCH_OPERATIONS = 10_000;

export type JsonPatchOperation = jsonpatch.Operation;

/** Go's name of a JSON value's type in `json: cannot unmarshal <type> into ...`. */
function goJsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'boolean') return 'bool';
  return typeof v;
}

/** Checks the body decodes as a list of operations (400 otherwise) and is not too long. */
export function decodeJsonPatch(body: unknown): JsonPatchOperation[] {
  if (body === null) return [];
  if (!Array.isArray(body)) {
    throw badRequest(
      `json: cannot unmarshal ${goJsonType(body)} into Go value of type jsonpatch.Patch`,
    );
  }
  for (const op of body) {
    if (!isJsonObject(op)) {
      throw badRequest(
        `json: cannot unmarshal ${goJsonType(op)} into Go value of type jsonpatch.Operation`,
      );
    }
  }
  if (body.length > MAX_JSON_PATCH_OPERATIONS) {
    throw tooLarge(
      `The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${body.length}`,
    );
  }
  return body as JsonPatchOperation[];
}

const OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);

/**
 * RFC 6902. Operations apply in order to a copy of the target; any failure (including a
 * failed `test`) leaves the target untouched and raises a 422.
 */
export function applyJsonPatch(target: unknown, body: unknown): JsonValue {
  const ops = decodeJsonPatch(body);
  let doc = cloneJson(target as JsonValue);
  ops.forEach((raw, index) => {
    // The library would accept its private `_get` op and mutate the operation; neither is
    // wanted here, so each operation is checked and copied first.
    const op = cloneJson(raw as unknown as JsonValue) as unknown as JsonPatchOperation;
    if (!OPS.has(op.op)) throw unprocessable(`Unexpected kind: ${String(op.op)}`);
    try {
      doc = jsonpatch.applyOperation(doc, op, true, true, true, index).newDocument;
    } catch (e) {
      throw unprocessable(describePatchFailure(e, index));
    }
  });
  return doc;
}

function describePatchFailure(e: unknown, index: number): string {
  if (e instanceof jsonpatch.JsonPatchError) {
    return `operation ${index} (${e.operation?.op ?? '?'} ${e.operation?.path ?? '?'}): ${e.name}`;
  }
  return `operation ${index}: ${e instanceof Error ? e.message : String(e)}`;
}
