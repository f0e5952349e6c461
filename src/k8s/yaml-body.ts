/**
 * Request bodies sent as `application/apply-patch+yaml` (server-side apply). kubectl sends
 * JSON (which is YAML); other clients send real YAML. The body must be one document holding
 * a mapping. Failures are 400 BadRequest with kube-apiserver's `error decoding YAML: ...`
 * prefix.
 *
 * YAML 1.2 core schema (what JSON round-trips through), merge keys (`<<`) allowed, duplicate
 * keys rejected, alias expansion bounded (a "billion laughs" body fails instead of growing),
 * and nesting bounded on the raw text before the parser runs (yaml-depth.ts), so a deeply
 * nested body is refused in one linear pass instead of stalling the member.
 */
import { isScalar, parseAllDocuments, type YAMLError } from 'yaml';
import { badRequest } from './errors.js';
import { isJsonObject, type JsonMap, type JsonValue, MAX_BODY_DEPTH } from './json.js';
import { yamlNestsDeeperThan } from './yaml-depth.js';

const PREFIX = 'error decoding YAML: ';

function firstError(text: string, errors: readonly YAMLError[]): string {
  const e = errors[0];
  if (!e) return 'invalid YAML';
  const offset = e.pos[0];
  const line = offset >= 0 ? text.slice(0, offset).split('\n').length : undefined;
  const reason = e.message.split(' at line ')[0] ?? e.message;
  return `error converting YAML to JSON: yaml: ${line !== undefined ? `line ${line}: ` : ''}${reason}`;
}

/** Go's name of a JSON value's type, as in `json: cannot unmarshal array into ...`. */
function goType(v: JsonValue): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'boolean') return 'bool';
  return typeof v;
}

function asObject(v: JsonValue): JsonMap {
  if (isJsonObject(v)) return v;
  throw badRequest(
    `${PREFIX}json: cannot unmarshal ${goType(v)} into Go value of type map[string]interface {}`,
  );
}

/** Aliases a document may expand: enough for anchors in real manifests, not for a bomb. */
export const MAX_YAML_ALIASES = 100;

/**
 * Parses an apply body into an object. Documents that are empty (a trailing `---`) are
 * ignored; more than one non-empty document is refused; a text that may nest deeper than
 * `maxDepth` is refused before it is parsed (the caller checks the exact depth afterwards).
 */
export function parseApplyBody(
  body: string | Uint8Array,
  maxDepth: number = MAX_BODY_DEPTH,
): JsonMap {
  const text = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{')) {
    // kubectl's bodies are JSON: the fast path, exact for numbers and strings.
    try {
      return asObject(JSON.parse(text) as JsonValue);
    } catch (e) {
      if (!(e instanceof SyntaxError)) throw e;
      // Not JSON: flow-style YAML such as `{a: 1}`; fall through.
    }
  }
  if (yamlNestsDeeperThan(text, maxDepth)) {
    throw badRequest(`${PREFIX}the object is nested deeper than ${maxDepth} levels`);
  }
  const docs = parseAllDocuments(text, {
    version: '1.2',
    merge: true,
    uniqueKeys: true,
    prettyErrors: false,
  });
  const list = Array.isArray(docs) ? docs : [docs];
  const nonEmpty = list.filter(
    (d) =>
      !(
        d.contents === null ||
        (isScalar(d.contents) && d.contents.value === null && d.contents.source === '')
      ),
  );
  for (const d of list)
    if (d.errors.length > 0) throw badRequest(PREFIX + firstError(text, d.errors));
  if (nonEmpty.length === 0) throw badRequest(`${PREFIX}the body holds no object`);
  if (nonEmpty.length > 1) {
    throw badRequest(
      `${PREFIX}an apply body must hold one YAML document, found ${nonEmpty.length}`,
    );
  }
  const doc = nonEmpty[0];
  let value: JsonValue;
  try {
    value = doc?.toJS({ maxAliasCount: MAX_YAML_ALIASES }) as JsonValue;
  } catch (e) {
    throw badRequest(PREFIX + (e instanceof Error ? e.message : String(e)));
  }
  return asObject(value);
}
