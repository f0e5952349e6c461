/**
 * Request bodies of the Kubernetes face: read within a byte bound, then parsed by media type
 * (JSON, or YAML as Kubernetes also accepts), with a nesting bound so that no later
 * recursive step (merge, schema validation) can run out of stack on hostile input.
 */
import type { IncomingMessage } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { MAX_BODY_DEPTH } from '../../k8s/json.js';
import { decodeProtobufBody } from '../../k8s/protobuf.js';
import { badRequest, StatusError, unsupportedMediaType } from '../../k8s/status.js';
import { MAX_YAML_ALIASES } from '../../k8s/yaml-body.js';
import { yamlNestsDeeperThan } from '../../k8s/yaml-depth.js';
import { bodyDeadline, DEFAULT_READ_BODY_TIMEOUT_MS } from '../body.js';

export { MAX_BODY_DEPTH };

/**
 * Reads the whole body, rejecting with 413 once it passes `limit` bytes, and with a 504
 * Timeout Status when it has not ended within `timeoutMs` (--read-body-timeout). The rest
 * of a refused body is left unread: the answer closes the connection (server.ts).
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  timeoutMs: number = DEFAULT_READ_BODY_TIMEOUT_MS,
): Promise<Buffer> {
  const tooLarge = () =>
    new StatusError('RequestEntityTooLarge', `Request entity too large: limit is ${limit}`);
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (declared > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const cancel = bodyDeadline(timeoutMs, () => {
      req.pause();
      finish(new StatusError('Timeout', `the request body did not arrive within ${timeoutMs} ms`));
    });
    const finish = (err?: unknown) => {
      if (done) return;
      done = true;
      cancel();
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      if (err) reject(err);
      else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        finish(tooLarge());
      } else chunks.push(chunk);
    };
    const onEnd = () => finish();
    const onError = (e: unknown) =>
      finish(badRequest(`reading the request body failed: ${String(e)}`));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/** The media type of a Content-Type header, lower-cased, without parameters. */
export function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

/** Throws 400 when `value` nests deeper than {@link MAX_BODY_DEPTH}. Iterative on purpose. */
export function checkDepth(value: unknown): void {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== 'object') continue;
    if (d > MAX_BODY_DEPTH)
      throw badRequest(`the object is nested deeper than ${MAX_BODY_DEPTH} levels`);
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push([child, d + 1]);
    }
  }
}

export function parseJsonText(text: string): unknown {
  // Measured before parsing: JSON.parse itself takes seconds over a megabyte of `[`.
  if (yamlNestsDeeperThan(text, MAX_BODY_DEPTH))
    throw badRequest(`json parse error: the object is nested deeper than ${MAX_BODY_DEPTH} levels`);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw badRequest(`json parse error: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Parses a YAML body; one too deeply nested is refused from its raw text, before parsing. */
export function parseYamlText(text: string): unknown {
  if (yamlNestsDeeperThan(text, MAX_BODY_DEPTH)) {
    throw badRequest(`yaml parse error: the object is nested deeper than ${MAX_BODY_DEPTH} levels`);
  }
  try {
    return parseYaml(text, { maxAliasCount: MAX_YAML_ALIASES, prettyErrors: false });
  } catch (e) {
    throw badRequest(
      `yaml parse error: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`,
    );
  }
}

export const PROTOBUF_TYPE = 'application/vnd.kubernetes.protobuf';
const JSON_TYPES = new Set(['', 'application/json', '*/*']);
const YAML_TYPES = new Set(['application/yaml', 'application/x-yaml', 'text/yaml']);

/**
 * Parses an object body (create, update) by its Content-Type: JSON, YAML, or the protobuf
 * of kubectl's one-line generators (src/k8s/protobuf.ts); anything else is 415. The value must be a
 * JSON object.
 */
export function parseObjectBody(
  buf: Buffer,
  contentType: string | undefined,
): Record<string, unknown> {
  const type = mediaType(contentType);
  if (type === PROTOBUF_TYPE) return asObject(decodeProtobufBody(buf));
  const text = buf.toString('utf8');
  let value: unknown;
  if (JSON_TYPES.has(type)) value = parseJsonText(text);
  else if (YAML_TYPES.has(type)) value = parseYamlText(text);
  else throw unsupportedMediaType(`application/json, application/yaml, ${PROTOBUF_TYPE}`);
  return asObject(value);
}

export function asObject(value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw badRequest('the request body must be a JSON object');
  }
  checkDepth(value);
  return value as Record<string, unknown>;
}
