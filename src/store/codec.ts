/**
 * The wire form of a command, for the Raft log and for anything else that must carry one
 * between processes. Encoding is deterministic (same command, same bytes) so that every
 * member logs the same entry. Decoding checks only the outer shape; apply runs the full
 * request checks.
 *
 * Two encodings are read; the first byte tells them apart:
 *
 *   0x7b '{'  JSON in which every byte string is {"$b": "<base64>"}: what etcetera wrote
 *             before the binary form (logs and data dirs written then are still read).
 *   0x01      binary, version 1: [0x01][value], where a value is a tagged tree holding
 *             exactly what JSON would (objects, arrays, strings, numbers, booleans, null,
 *             byte strings), with byte strings raw instead of base64 and the property
 *             names and string values the commands use as one-byte indexes into NAMES.
 *
 * Binary value layout (uvarint = unsigned LEB128):
 *   0x00 null   0x01 false   0x02 true
 *   0x03 uvarint            a non-negative safe integer
 *   0x04 f64 big-endian     any other number
 *   0x05 text               a string (text below)
 *   0x06 uvarint n, n bytes a byte string (Uint8Array)
 *   0x07 uvarint n, n values                 an array
 *   0x08 uvarint n, n × (text name, value)   an object (properties in insertion order;
 *                                            undefined ones are left out, as JSON does)
 *   text: uvarint x; x odd: NAMES[x >> 1]; x even: x >> 1 bytes of UTF-8 follow.
 * NAMES only ever grows at its end: an index, once written, means the same name forever.
 *
 * Members of one cluster must all read the binary form: a member of a version before it
 * applies such an entry as a no-op (an undecodable entry), so upgrade every member before
 * writing through a new one.
 */
import { EtceteraError } from '../errors.js';
import type { Command } from './types.js';

const OPS = new Set([
  'put',
  'deleteRange',
  'txn',
  'compact',
  'leaseGrant',
  'leaseRevoke',
  'alarm',
  'auth',
  'noop',
]);

const BINARY_V1 = 0x01;
const JSON_OPEN = 0x7b;

const T_NULL = 0x00;
const T_FALSE = 0x01;
const T_TRUE = 0x02;
const T_UINT = 0x03;
const T_F64 = 0x04;
const T_TEXT = 0x05;
const T_BYTES = 0x06;
const T_ARRAY = 0x07;
const T_OBJECT = 0x08;

/** Names and string values written as indexes. Append only (see the header). */
const NAMES: readonly string[] = [
  // property names of commands and requests
  'op',
  'key',
  'value',
  'rangeEnd',
  'lease',
  'prevKv',
  'ignoreValue',
  'ignoreLease',
  'auth',
  'user',
  'revision',
  'compare',
  'success',
  'failure',
  'type',
  'request',
  'target',
  'result',
  'version',
  'createRevision',
  'modRevision',
  'limit',
  'sortOrder',
  'sortTarget',
  'serializable',
  'keysOnly',
  'countOnly',
  'minModRevision',
  'maxModRevision',
  'minCreateRevision',
  'maxCreateRevision',
  'id',
  'ttl',
  'action',
  'memberId',
  'alarm',
  // string values
  'put',
  'deleteRange',
  'txn',
  'range',
  'compact',
  'leaseGrant',
  'leaseRevoke',
  'noop',
  'EQUAL',
  'GREATER',
  'LESS',
  'NOT_EQUAL',
  'VERSION',
  'CREATE',
  'MOD',
  'VALUE',
  'LEASE',
  'NONE',
  'ASCEND',
  'DESCEND',
  'KEY',
  'activate',
  'deactivate',
  'NOSPACE',
  'CORRUPT',
];
const NAME_INDEX = new Map(NAMES.map((n, i) => [n, i]));

// --- encoding ----------------------------------------------------------------------------

/** A growing scratch buffer the encoder writes into; each result is copied out of it. */
let scratch = Buffer.allocUnsafe(4096);
let pos = 0;

function room(n: number): void {
  if (pos + n <= scratch.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(scratch.length * 2, pos + n));
  scratch.copy(bigger, 0, 0, pos);
  scratch = bigger;
}

function putUvarint(v: number): void {
  room(8);
  while (v >= 0x80) {
    scratch[pos++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  scratch[pos++] = v;
}

function putText(s: string): void {
  const known = NAME_INDEX.get(s);
  if (known !== undefined) return putUvarint(known * 2 + 1);
  const n = Buffer.byteLength(s, 'utf8');
  putUvarint(n * 2);
  room(n);
  pos += scratch.write(s, pos, 'utf8');
}

function putValue(v: unknown, depth: number): void {
  if (depth > MAX_DEPTH)
    throw new EtceteraError('ERR_NESTING_TOO_DEEP', {
      detail: `a command may nest at most ${MAX_DEPTH} levels`,
    });
  room(9);
  if (v === null) {
    scratch[pos++] = T_NULL;
  } else if (v === false) {
    scratch[pos++] = T_FALSE;
  } else if (v === true) {
    scratch[pos++] = T_TRUE;
  } else if (typeof v === 'number') {
    if (Number.isSafeInteger(v) && v >= 0 && !Object.is(v, -0)) {
      scratch[pos++] = T_UINT;
      putUvarint(v);
    } else {
      scratch[pos++] = T_F64;
      scratch.writeDoubleBE(v, pos);
      pos += 8;
    }
  } else if (typeof v === 'string') {
    scratch[pos++] = T_TEXT;
    putText(v);
  } else if (v instanceof Uint8Array) {
    scratch[pos++] = T_BYTES;
    putUvarint(v.length);
    room(v.length);
    scratch.set(v, pos);
    pos += v.length;
  } else if (Array.isArray(v)) {
    scratch[pos++] = T_ARRAY;
    putUvarint(v.length);
    for (const x of v) putValue(x === undefined ? null : x, depth + 1);
  } else if (typeof v === 'object') {
    scratch[pos++] = T_OBJECT;
    const o = v as Record<string, unknown>;
    let n = 0;
    for (const k in o) if (Object.hasOwn(o, k) && o[k] !== undefined) n++;
    putUvarint(n);
    for (const k in o) {
      if (!Object.hasOwn(o, k)) continue;
      const x = o[k];
      if (x === undefined) continue;
      putText(k);
      putValue(x, depth + 1);
    }
  } else {
    throw new EtceteraError('ERR_INVALID_ARGUMENT', {
      detail: `a command cannot carry a ${typeof v}`,
    });
  }
}

export function encodeCommand(c: Command): Uint8Array {
  pos = 0;
  room(1);
  scratch[pos++] = BINARY_V1;
  putValue(c, 0);
  // A copy from Node's shared slab for small sizes, as the Raft envelope's.
  const out = Buffer.allocUnsafe(pos);
  scratch.copy(out, 0, 0, pos);
  return out;
}

/**
 * The JSON form etcetera wrote before the binary one. Still read by decodeCommand; kept so
 * that tests can write a log in it.
 */
export function encodeCommandJson(c: Command): Uint8Array {
  // Look at the holder's own value, not `v`: JSON.stringify has already turned a Buffer into
  // {type: 'Buffer', data} through its toJSON by the time the replacer sees it.
  const json = JSON.stringify(c, function (this: Record<string, unknown>, k, v) {
    const own = this[k];
    return own instanceof Uint8Array
      ? { $b: Buffer.from(own.buffer, own.byteOffset, own.byteLength).toString('base64') }
      : v;
  });
  return new Uint8Array(Buffer.from(json, 'utf8'));
}

// --- decoding ----------------------------------------------------------------------------

class Reader {
  pos = 1;
  private readonly view: DataView;
  constructor(readonly b: Uint8Array) {
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }

  byte(): number {
    const v = this.b[this.pos++];
    if (v === undefined) throw truncated();
    return v;
  }

  uvarint(): number {
    let v = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.byte();
      v += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) return v;
      scale *= 0x80;
    }
    throw corrupt('varint too long');
  }

  take(n: number): Uint8Array {
    const end = this.pos + n;
    if (end > this.b.length) throw truncated();
    // A copy of its own (as the JSON form's): a view would keep the whole entry, or a
    // peer's message, alive in the store's overlay and the watch window.
    const out = new Uint8Array(this.b.subarray(this.pos, end));
    this.pos = end;
    return out;
  }

  text(): string {
    const x = this.uvarint();
    if (x % 2 === 1) {
      const name = NAMES[(x - 1) / 2];
      if (name === undefined) throw corrupt('unknown name index');
      return name;
    }
    const n = x / 2;
    const end = this.pos + n;
    if (end > this.b.length) throw truncated();
    const s = Buffer.from(this.b.buffer, this.b.byteOffset + this.pos, n).toString('utf8');
    this.pos = end;
    return s;
  }

  value(depth: number): unknown {
    if (depth > MAX_DEPTH) throw corrupt('nested too deeply');
    const tag = this.byte();
    switch (tag) {
      case T_NULL:
        return null;
      case T_FALSE:
        return false;
      case T_TRUE:
        return true;
      case T_UINT:
        return this.uvarint();
      case T_F64: {
        if (this.pos + 8 > this.b.length) throw truncated();
        const v = this.view.getFloat64(this.pos, false);
        this.pos += 8;
        return v;
      }
      case T_TEXT:
        return this.text();
      case T_BYTES:
        return this.take(this.uvarint());
      case T_ARRAY: {
        const n = this.count();
        const out: unknown[] = [];
        for (let i = 0; i < n; i++) out.push(this.value(depth + 1));
        return out;
      }
      case T_OBJECT: {
        const n = this.count();
        const out: Record<string, unknown> = {};
        for (let i = 0; i < n; i++) {
          const k = this.text();
          const v = this.value(depth + 1);
          // As JSON.parse: an own data property, also for "__proto__".
          if (k === '__proto__')
            Object.defineProperty(out, k, {
              value: v,
              enumerable: true,
              writable: true,
              configurable: true,
            });
          else out[k] = v;
        }
        return out;
      }
      default:
        throw corrupt(`unknown tag ${tag}`);
    }
  }

  /** An element count, which cannot exceed the bytes left (each element takes one or more). */
  private count(): number {
    const n = this.uvarint();
    if (n > this.b.length - this.pos) throw truncated();
    return n;
  }
}

/**
 * The deepest a command may nest: a nested txn takes three levels (its op, the op's
 * request, the branch), so this allows txns nested about 340 deep, past etcd's default
 * budget (--max-txn-ops 128 allows 127). The encoder refuses a deeper command with
 * ERR_NESTING_TOO_DEEP before it is proposed, so the decoder never meets one it cannot read;
 * the bound keeps both recursions well within the stack.
 */
const MAX_DEPTH = 1024;

const corrupt = (detail: string) =>
  new EtceteraError('ERR_CORRUPT', { detail: `command: ${detail}` });
const truncated = () => corrupt('truncated');

export function decodeCommand(b: Uint8Array): Command {
  let parsed: unknown;
  if (b[0] === BINARY_V1) {
    const r = new Reader(b);
    parsed = r.value(0);
    if (r.pos !== b.length) throw corrupt('trailing bytes');
  } else if (b[0] === JSON_OPEN) {
    parsed = decodeJson(b);
  } else {
    throw corrupt('unknown encoding');
  }
  const op = (parsed as { op?: unknown } | null)?.op;
  if (typeof op !== 'string' || !OPS.has(op))
    throw new EtceteraError('ERR_CORRUPT', { detail: 'unknown command' });
  return parsed as Command;
}

function decodeJson(b: Uint8Array): unknown {
  try {
    return JSON.parse(
      Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8'),
      (_k, v) =>
        v !== null &&
        typeof v === 'object' &&
        typeof v.$b === 'string' &&
        Object.keys(v).length === 1
          ? new Uint8Array(Buffer.from(v.$b, 'base64'))
          : v,
    );
  } catch (e) {
    throw new EtceteraError('ERR_CORRUPT', { detail: 'command is not JSON' }, { cause: e });
  }
}
