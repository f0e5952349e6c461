/**
 * JSON values as JSON.parse returns them, and the few operations every library needs on
 * them (object test, deep copy, deep equality). Objects are plain; arrays are arrays.
 */

export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };
export type JsonMap = { [key: string]: JsonValue };

/** Deepest nesting of objects and arrays accepted in a request body. */
export const MAX_BODY_DEPTH = 200;

export function isJsonObject(v: unknown): v is JsonMap {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A deep copy (shares nothing with the input). */
export function cloneJson<T>(v: T): T {
  if (Array.isArray(v)) return v.map(cloneJson) as T;
  if (isJsonObject(v)) {
    const out: JsonMap = {};
    for (const k of Object.keys(v)) out[k] = cloneJson(v[k] as JsonValue);
    return out as T;
  }
  return v;
}

/** Structural equality of JSON values; key order does not matter, array order does. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (isJsonObject(a)) {
    if (!isJsonObject(b)) return false;
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    for (const k of ka) if (!Object.hasOwn(b, k) || !jsonEqual(a[k], b[k])) return false;
    return true;
  }
  return false;
}
