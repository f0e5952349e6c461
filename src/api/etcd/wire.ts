/**
 * The scalar wire forms of etcd's JSON API (grpc-gateway with protobuf's JSON mapping):
 * bytes as standard base64, 64-bit integers as JSON numbers or decimal strings, enums by name
 * or number. Decoders throw ERR_BAD_FIELD naming the field; what etcd prints comes from
 * src/wire/etcd-json.ts.
 */
import { EtceteraError } from '../../errors.js';

export function badField(path: string, problem: string): EtceteraError {
  return new EtceteraError('ERR_BAD_FIELD', { detail: `${path || 'body'}: ${problem}` });
}

// --- bytes ------------------------------------------------------------------------------

/** Standard base64 with padding, the only form Go's decoder accepts (newlines aside). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const EMPTY = new Uint8Array(0);

/** Decodes a base64 field as Go's encoding/base64 StdEncoding does (CR and LF are skipped). */
export function decodeBytes(path: string, s: string): Uint8Array {
  if (s.length === 0) return EMPTY;
  const text = s.includes('\n') || s.includes('\r') ? s.replace(/[\r\n]/g, '') : s;
  if (!BASE64.test(text)) {
    throw badField(path, `illegal base64 data at input byte ${base64ErrorOffset(s)}`);
  }
  const buf = Buffer.from(text, 'base64');
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

const isB64 = (c: string) => /[A-Za-z0-9+/]/.test(c);
const isNl = (c: string | undefined) => c === '\n' || c === '\r';

/**
 * The offset Go's base64 decoder reports for invalid input, so our message names the same
 * byte etcd's does. Walks the input one 4-character quantum at a time, as Go does.
 */
export function base64ErrorOffset(src: string): number {
  let si = 0;
  while (si < src.length) {
    let j = 0;
    while (j < 4) {
      if (si === src.length) return j === 0 ? src.length : si - j;
      const c = src[si++] as string;
      if (isB64(c)) {
        j++;
        continue;
      }
      if (isNl(c)) continue;
      if (c !== '=' || j < 2) return si - 1;
      if (j === 2) {
        while (si < src.length && isNl(src[si])) si++;
        if (si === src.length) return src.length;
        if (src[si] !== '=') return si - 1;
        si++;
      }
      while (si < src.length && isNl(src[si])) si++;
      return si;
    }
  }
  return src.length;
}

// --- integers ---------------------------------------------------------------------------

/** The text Go's JSON decoder accepts inside a quoted int64: a JSON integer, spaces around. */
const INT_TEXT = /^\s*-?(?:0|[1-9][0-9]*)\s*$/;

/**
 * An int64 field as a JS number. Beyond ±(2^53-1) etcetera refuses the value rather than
 * lose precision (etcd accepts the whole int64 range; no revision or count gets that big).
 */
export function decodeInt64(path: string, v: number | string): number {
  let n: number;
  if (typeof v === 'number') n = v;
  else if (INT_TEXT.test(v)) n = Number(v);
  else throw badField(path, `expected an int64, got string ${JSON.stringify(v.slice(0, 40))}`);
  if (!Number.isSafeInteger(n)) {
    throw badField(path, `expected an integer within ±(2^53-1), got ${v}`);
  }
  return n;
}

/** A uint64 identifier (member ID) as its canonical decimal string. */
export function decodeUint64(path: string, v: number | string): string {
  const text = typeof v === 'number' ? String(v) : v.trim();
  if (!/^(?:0|[1-9][0-9]*)$/.test(text) || BigInt(text) > 0xffff_ffff_ffff_ffffn) {
    throw badField(path, `expected a uint64, got ${JSON.stringify(v)}`);
  }
  return text;
}

// --- enums ------------------------------------------------------------------------------

/** An enum given by name or by its protobuf number; `names` are in number order. */
export function decodeEnum<N extends string>(
  path: string,
  v: string | number,
  names: readonly N[],
  typeName: string,
): N {
  const name = typeof v === 'number' ? names[v] : (v as N);
  if (name === undefined || !names.includes(name)) {
    throw badField(path, `unknown value ${JSON.stringify(v)} for enum ${typeName}`);
  }
  return name;
}
