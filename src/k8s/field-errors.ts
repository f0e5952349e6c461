/**
 * Field errors as Kubernetes reports them (apimachinery's field.Error): a type, the field path
 * (`spec.containers[0].name`), the bad value and a detail. A Status cause is
 * `{reason: type, message: body, field}`, where the body is `Invalid value: "x": detail`,
 * `Required value`, ... kubectl prints `<field>: <body>` for each cause of a 422, so the body
 * texts and the Go value formatting are kept as Kubernetes writes them.
 */

export const FieldErrorType = {
  NotFound: 'FieldValueNotFound',
  Required: 'FieldValueRequired',
  Duplicate: 'FieldValueDuplicate',
  Invalid: 'FieldValueInvalid',
  NotSupported: 'FieldValueNotSupported',
  Forbidden: 'FieldValueForbidden',
  TooLong: 'FieldValueTooLong',
  TooMany: 'FieldValueTooMany',
  Internal: 'InternalError',
  TypeInvalid: 'FieldValueTypeInvalid',
} as const;
export type FieldErrorType = (typeof FieldErrorType)[keyof typeof FieldErrorType];

const TYPE_TEXT: Record<FieldErrorType, string> = {
  FieldValueNotFound: 'Not found',
  FieldValueRequired: 'Required value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  InternalError: 'Internal error',
  FieldValueTypeInvalid: 'Invalid value',
};

/** Marks a field error whose body leaves the value out (Kubernetes' omitValue). */
export const OMIT_VALUE: unique symbol = Symbol('omit value');

export interface FieldError {
  readonly type: FieldErrorType;
  /** The path as Kubernetes prints it: `spec.containers[0].ports[1].containerPort`. */
  readonly field: string;
  readonly badValue: unknown;
  readonly detail: string;
}

/** One cause of a Status (details.causes[]). */
export interface StatusCause {
  reason: string;
  message: string;
  field: string;
}

/** Types whose body never shows the value. */
const VALUELESS: ReadonlySet<FieldErrorType> = new Set([
  FieldErrorType.Required,
  FieldErrorType.Forbidden,
  FieldErrorType.TooLong,
  FieldErrorType.Internal,
]);

/** The message of a cause: the error without its field, e.g. `Invalid value: "x": bad`. */
export function fieldErrorBody(e: FieldError): string {
  let s = TYPE_TEXT[e.type];
  if (!VALUELESS.has(e.type) && e.badValue !== OMIT_VALUE) s += `: ${goValue(e.badValue)}`;
  if (e.detail.length > 0) s += `: ${e.detail}`;
  return s;
}

/** `<field>: <body>`, as field.Error's Error() prints it. */
export function fieldErrorString(e: FieldError): string {
  return `${e.field}: ${fieldErrorBody(e)}`;
}

export function toCause(e: FieldError): StatusCause {
  return { reason: e.type, message: fieldErrorBody(e), field: e.field };
}

/**
 * Kubernetes' aggregate of error texts: duplicates dropped, one text alone, several as
 * `[a, b]`.
 */
export function aggregateMessages(texts: readonly string[]): string {
  const unique = [...new Set(texts)];
  if (unique.length === 1) return unique[0] ?? '';
  return `[${unique.join(', ')}]`;
}

// --- constructors, named as apimachinery's -------------------------------------------------

export function required(field: string, detail = ''): FieldError {
  return { type: FieldErrorType.Required, field, badValue: '', detail };
}

export function invalid(field: string, value: unknown, detail: string): FieldError {
  return { type: FieldErrorType.Invalid, field, badValue: value, detail };
}

export function typeInvalid(field: string, value: unknown, detail: string): FieldError {
  return { type: FieldErrorType.TypeInvalid, field, badValue: value, detail };
}

export function notSupported(field: string, value: unknown, valid: readonly unknown[]): FieldError {
  const detail =
    valid.length > 0 ? `supported values: ${valid.map((v) => goQuote(goPlain(v))).join(', ')}` : '';
  return { type: FieldErrorType.NotSupported, field, badValue: value, detail };
}

export function forbidden(field: string, detail: string): FieldError {
  return { type: FieldErrorType.Forbidden, field, badValue: '', detail };
}

export function duplicate(field: string, value: unknown): FieldError {
  return { type: FieldErrorType.Duplicate, field, badValue: value, detail: '' };
}

export function tooLong(field: string, maxLength: number): FieldError {
  const detail = maxLength >= 0 ? `may not be more than ${maxLength} bytes` : 'value is too long';
  return { type: FieldErrorType.TooLong, field, badValue: OMIT_VALUE, detail };
}

export function tooMany(field: string, actual: number, max: number): FieldError {
  const detail = max >= 0 ? `must have at most ${max} items` : 'has too many items';
  return {
    type: FieldErrorType.TooMany,
    field,
    badValue: actual >= 0 ? actual : OMIT_VALUE,
    detail,
  };
}

// --- Go value formatting ---------------------------------------------------------------------

/**
 * A value as field.Error prints it: numbers and booleans bare (`%v`), strings quoted (`%q`),
 * null as `null`, anything else in Go syntax (`%#v`), e.g. `[]string{"a", "b"}`.
 */
export function goValue(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return goSyntax(v);
}

/** `fmt.Sprint(v)` for the scalar values that appear in lists of supported values. */
function goPlain(v: unknown): string {
  return typeof v === 'string' ? v : v === null ? '<nil>' : String(v);
}

function goSyntax(v: unknown): string {
  if (Array.isArray(v)) {
    const allStrings = v.every((x) => typeof x === 'string');
    const items = v.map((x) => (allStrings ? goQuote(x as string) : goInterface(x)));
    return `${allStrings ? '[]string' : '[]interface {}'}{${items.join(', ')}}`;
  }
  if (typeof v === 'object' && v !== null) {
    const entries = Object.keys(v)
      .sort()
      .map((k) => `${goQuote(k)}:${goInterface((v as Record<string, unknown>)[k])}`);
    return `map[string]interface {}{${entries.join(', ')}}`;
  }
  return String(v);
}

function goInterface(v: unknown): string {
  if (v === null || v === undefined) return 'interface {}(nil)';
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return goSyntax(v);
}

const GO_ESCAPES: Record<string, string> = {
  '\u0007': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
  '"': '\\"',
  '\\': '\\\\',
};

/** Go's strconv.Quote for the characters that matter: escapes, control bytes as \x. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const esc = GO_ESCAPES[ch];
    if (esc !== undefined) out += esc;
    else {
      const cp = ch.codePointAt(0) ?? 0;
      if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
      else out += ch;
    }
  }
  return `${out}"`;
}
