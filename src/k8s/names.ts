/**
 * Name and metadata rules of Kubernetes (apimachinery's util/validation and the ObjectMeta
 * checks), with Kubernetes' message texts: the server reports them as 422 causes
 * (`metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must ...`).
 *
 * Each `validate*`/`is*` function returns the list of problems, empty when the value is fine.
 */
import { randomInt } from 'node:crypto';
import { type FieldError, forbidden, invalid, required, tooLong } from './field-errors.js';

// --- message builders (texts as Kubernetes words them) ---------------------------------------

export function maxLenError(length: number): string {
  return `must be no more than ${length} characters`;
}

/** `<msg> (e.g. 'a',  or 'b', regex used for validation is '<re>')`: Kubernetes' text, double space included. */
export function regexError(msg: string, re: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${re}')`;
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${re}')`;
}

const EMPTY_ERROR = 'must be non-empty';

// --- formats ------------------------------------------------------------------------------------

const QNAME_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const QNAME_RE = new RegExp(`^${QNAME_FMT}$`);
const QNAME_ERR =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QNAME_MAX = 63;

const LABEL_VALUE_FMT = `(${QNAME_FMT})?`;
const LABEL_VALUE_RE = new RegExp(`^${LABEL_VALUE_FMT}$`);
const LABEL_VALUE_ERR =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
export const LABEL_VALUE_MAX_LENGTH = 63;

const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_LABEL_RE = new RegExp(`^${DNS1123_LABEL_FMT}$`);
const DNS1123_LABEL_ERR =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
export const DNS1123_LABEL_MAX_LENGTH = 63;

const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN_RE = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1123_SUBDOMAIN_ERR =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;

const DNS1035_LABEL_FMT = '[a-z]([-a-z0-9]*[a-z0-9])?';
const DNS1035_LABEL_RE = new RegExp(`^${DNS1035_LABEL_FMT}$`);
const DNS1035_LABEL_ERR =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
export const DNS1035_LABEL_MAX_LENGTH = 63;

/** Go's len() counts UTF-8 bytes; Kubernetes' length limits are in bytes. */
function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

export function validateDns1123Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1123_LABEL_MAX_LENGTH)
    errs.push(maxLenError(DNS1123_LABEL_MAX_LENGTH));
  if (!DNS1123_LABEL_RE.test(value)) {
    if (DNS1123_SUBDOMAIN_RE.test(value)) errs.push('must not contain dots');
    else errs.push(regexError(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, 'my-name', '123-abc'));
  }
  return errs;
}

export function validateDns1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1123_SUBDOMAIN_MAX_LENGTH) {
    errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH));
  }
  if (!DNS1123_SUBDOMAIN_RE.test(value)) {
    errs.push(regexError(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, 'example.com'));
  }
  return errs;
}

export function validateDns1035Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1035_LABEL_MAX_LENGTH)
    errs.push(maxLenError(DNS1035_LABEL_MAX_LENGTH));
  if (!DNS1035_LABEL_RE.test(value)) {
    errs.push(regexError(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, 'my-name', 'abc-123'));
  }
  return errs;
}

/** A label key or annotation key: `[prefix/]name`, prefix a DNS-1123 subdomain. */
export function validateQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0] ?? '';
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix.length === 0) errs.push(`prefix part ${EMPTY_ERROR}`);
    else errs.push(...validateDns1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  } else {
    return [
      `a qualified name ${regexError(QNAME_ERR, QNAME_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push(`name part ${EMPTY_ERROR}`);
  else if (byteLength(name) > QNAME_MAX) errs.push(`name part ${maxLenError(QNAME_MAX)}`);
  if (!QNAME_RE.test(name)) {
    errs.push(`name part ${regexError(QNAME_ERR, QNAME_FMT, 'MyName', 'my.name', '123-abc')}`);
  }
  return errs;
}

export function validateLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > LABEL_VALUE_MAX_LENGTH) errs.push(maxLenError(LABEL_VALUE_MAX_LENGTH));
  if (!LABEL_VALUE_RE.test(value)) {
    errs.push(regexError(LABEL_VALUE_ERR, LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345'));
  }
  return errs;
}

/** Names that cannot be a URL path segment (`.`, `..`, or containing `/` or `%`). */
export function validatePathSegmentName(name: string, prefix = false): string[] {
  if (!prefix && (name === '.' || name === '..')) return [`may not be '${name}'`];
  const errs: string[] = [];
  for (const bad of ['/', '%']) if (name.includes(bad)) errs.push(`may not contain '${bad}'`);
  return errs;
}

// --- name rules of kinds ---------------------------------------------------------------------------

/**
 * A kind's name rule. `prefix` is true for generateName, whose trailing dash is allowed
 * because random characters follow it.
 */
export type NameValidator = (name: string, prefix: boolean) => string[];

function maskTrailingDash(name: string): string {
  return name.length > 1 && name.endsWith('-') ? `${name.slice(0, -2)}a` : name;
}

export const nameIsDnsSubdomain: NameValidator = (name, prefix) =>
  validateDns1123Subdomain(prefix ? maskTrailingDash(name) : name);
export const nameIsDnsLabel: NameValidator = (name, prefix) =>
  validateDns1123Label(prefix ? maskTrailingDash(name) : name);
export const nameIsDns1035Label: NameValidator = (name, prefix) =>
  validateDns1035Label(prefix ? maskTrailingDash(name) : name);
/** Custom resources and a few kinds only require a valid path segment. */
export const nameIsPathSegment: NameValidator = (name, prefix) =>
  validatePathSegmentName(name, prefix);

// --- generateName ----------------------------------------------------------------------------------

/** Kubernetes' alphabet for random name suffixes: no vowels, no look-alike characters. */
export const NAME_SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
export const NAME_SUFFIX_LENGTH = 5;
/** The base is cut so that base + suffix fits in a 63-character label. */
export const MAX_GENERATED_BASE_LENGTH = 63 - NAME_SUFFIX_LENGTH;

/**
 * `generateName` + 5 random characters, the base cut to 58 characters as Kubernetes does.
 * `randomIndex(n)` returns an integer in [0, n); injectable for tests.
 */
export function generateNameFrom(
  base: string,
  randomIndex: (n: number) => number = (n) => randomInt(n),
): string {
  const cut =
    base.length > MAX_GENERATED_BASE_LENGTH ? base.slice(0, MAX_GENERATED_BASE_LENGTH) : base;
  let suffix = '';
  for (let i = 0; i < NAME_SUFFIX_LENGTH; i++) {
    suffix += NAME_SUFFIX_ALPHABET[randomIndex(NAME_SUFFIX_ALPHABET.length)] ?? 'x';
  }
  return cut + suffix;
}

// --- ObjectMeta ------------------------------------------------------------------------------------

export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

export function validateLabels(labels: unknown, field: string): FieldError[] {
  if (labels === undefined || labels === null) return [];
  const errs: FieldError[] = [];
  for (const [k, v] of Object.entries(labels as Record<string, unknown>)) {
    for (const m of validateQualifiedName(k)) errs.push(invalid(field, k, m));
    const value = typeof v === 'string' ? v : String(v);
    for (const m of validateLabelValue(value)) errs.push(invalid(field, value, m));
  }
  return errs;
}

export function validateAnnotations(annotations: unknown, field: string): FieldError[] {
  if (annotations === undefined || annotations === null) return [];
  const errs: FieldError[] = [];
  let total = 0;
  for (const [k, v] of Object.entries(annotations as Record<string, unknown>)) {
    for (const m of validateQualifiedName(k.toLowerCase())) errs.push(invalid(field, k, m));
    total += byteLength(k) + byteLength(typeof v === 'string' ? v : String(v));
  }
  if (total > TOTAL_ANNOTATION_SIZE_LIMIT) errs.push(tooLong(field, TOTAL_ANNOTATION_SIZE_LIMIT));
  return errs;
}

export function validateFinalizers(finalizers: unknown, field: string): FieldError[] {
  if (!Array.isArray(finalizers)) return [];
  const errs: FieldError[] = [];
  for (const f of finalizers) {
    const s = String(f);
    for (const m of validateQualifiedName(s)) errs.push(invalid(field, s, m));
  }
  if (finalizers.includes('orphan') && finalizers.includes('foregroundDeletion')) {
    errs.push(
      invalid(field, finalizers, 'finalizer orphan and foregroundDeletion cannot be both set'),
    );
  }
  return errs;
}

export function validateOwnerReferences(refs: unknown, field: string): FieldError[] {
  if (!Array.isArray(refs)) return [];
  const errs: FieldError[] = [];
  let controller = '';
  for (const ref of refs as Record<string, unknown>[]) {
    const apiVersion = String(ref.apiVersion ?? '');
    const version = apiVersion.includes('/') ? apiVersion.split('/')[1] : apiVersion;
    if (!version)
      errs.push(invalid(`${field}.apiVersion`, apiVersion, 'version must not be empty'));
    if (!ref.kind)
      errs.push(invalid(`${field}.kind`, String(ref.kind ?? ''), 'kind must not be empty'));
    if (!ref.name)
      errs.push(invalid(`${field}.name`, String(ref.name ?? ''), 'name must not be empty'));
    if (!ref.uid)
      errs.push(invalid(`${field}.uid`, String(ref.uid ?? ''), 'uid must not be empty'));
    if (ref.controller === true) {
      const current = `${String(ref.kind)}/${String(ref.name)}`;
      if (controller !== '') {
        errs.push(
          invalid(
            field,
            refs,
            `Only one reference can have Controller set to true. Found "true" in references for ${controller} and ${current}`,
          ),
        );
      } else controller = current;
    }
  }
  return errs;
}

export interface ObjectMetaRules {
  /** The object lives in a namespace (metadata.namespace required) or is cluster-scoped. */
  namespaced: boolean;
  name: NameValidator;
}

/**
 * ObjectMeta as Kubernetes validates it on create and update: name (or generateName),
 * namespace, generation, labels, annotations, ownerReferences, finalizers. Paths start at
 * `metadata`.
 */
export function validateObjectMeta(
  meta: Record<string, unknown>,
  rules: ObjectMetaRules,
): FieldError[] {
  const errs: FieldError[] = [];
  const generateName = typeof meta.generateName === 'string' ? meta.generateName : '';
  const name = typeof meta.name === 'string' ? meta.name : '';
  const namespace = typeof meta.namespace === 'string' ? meta.namespace : '';
  if (generateName !== '') {
    for (const m of rules.name(generateName, true)) {
      errs.push(invalid('metadata.generateName', generateName, m));
    }
  }
  if (name === '') errs.push(required('metadata.name', 'name or generateName is required'));
  else for (const m of rules.name(name, false)) errs.push(invalid('metadata.name', name, m));
  if (rules.namespaced) {
    if (namespace === '') errs.push(required('metadata.namespace'));
    else {
      for (const m of nameIsDnsLabel(namespace, false)) {
        errs.push(invalid('metadata.namespace', namespace, m));
      }
    }
  } else if (namespace !== '') {
    errs.push(forbidden('metadata.namespace', 'not allowed on this type'));
  }
  if (typeof meta.generation === 'number' && meta.generation < 0) {
    errs.push(
      invalid('metadata.generation', meta.generation, 'must be greater than or equal to 0'),
    );
  }
  errs.push(...validateLabels(meta.labels, 'metadata.labels'));
  errs.push(...validateAnnotations(meta.annotations, 'metadata.annotations'));
  errs.push(...validateOwnerReferences(meta.ownerReferences, 'metadata.ownerReferences'));
  errs.push(...validateFinalizers(meta.finalizers, 'metadata.finalizers'));
  return errs;
}
