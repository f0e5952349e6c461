/**
 * The string formats kube-apiserver checks in CRD schemas (apiextensions' supported format
 * list). Any other `format` is ignored, as Kubernetes drops it. Names are normalised the way
 * go-openapi does (dashes removed): `date-time` and `datetime` are the same format.
 */
import { isIPv4, isIPv6 } from 'node:net';

const re = (r: RegExp) => (s: string) => r.test(s);

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const UUID3 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const UUID4 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i;
const UUID5 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i;
const HOSTNAME =
  /^(?=.{1,255}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;
const MAC =
  /^(?:[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){5}|[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){7}|[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){19}|[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){2,9})$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;
/** Go's time.ParseDuration syntax, or the Scala-like `22 ns` go-openapi also accepts. */
const DURATION =
  /^(?:[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+|0|\d+\s*(?:ns|us|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?))$/;

function validDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  const days = new Date(Date.UTC(y, m, 0)).getUTCDate();
  return d <= days;
}

function isDate(s: string): boolean {
  const m = DATE.exec(s);
  return m !== null && validDate(Number(m[1]), Number(m[2]), Number(m[3]));
}

function isDateTime(s: string): boolean {
  const m = DATE_TIME.exec(s);
  if (!m) return false;
  const [h, min, sec] = [Number(m[4]), Number(m[5]), Number(m[6])];
  return validDate(Number(m[1]), Number(m[2]), Number(m[3])) && h < 24 && min < 60 && sec < 61;
}

function isCidr(s: string): boolean {
  const slash = s.indexOf('/');
  if (slash < 0) return false;
  const ip = s.slice(0, slash);
  const bits = s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bits)) return false;
  if (isIPv4(ip)) return Number(bits) <= 32;
  return isIPv6(ip) && Number(bits) <= 128;
}

function isUri(s: string): boolean {
  // net/url.ParseRequestURI: an absolute URI or an absolute path, no spaces.
  if (/\s/.test(s)) return false;
  if (s.startsWith('/')) return true;
  return /^[A-Za-z][A-Za-z0-9+.-]*:.+$/.test(s);
}

function isEmail(s: string): boolean {
  // net/mail.ParseAddress accepts `Name <addr>` too.
  const inner = /<([^<>]+)>\s*$/.exec(s);
  return /^[^\s@<>]+@[^\s@<>]+$/.test(inner ? (inner[1] ?? '') : s);
}

function digitsOf(s: string): string {
  return s.replace(/[\s-]/g, '');
}

function isIsbn10(s: string): boolean {
  const d = digitsOf(s);
  if (!/^\d{9}[\dX]$/.test(d)) return false;
  let sum = 0;
  for (let i = 0; i < 10; i++) sum += (10 - i) * (d[i] === 'X' ? 10 : Number(d[i]));
  return sum % 11 === 0;
}

function isIsbn13(s: string): boolean {
  const d = digitsOf(s);
  if (!/^\d{13}$/.test(d)) return false;
  let sum = 0;
  for (let i = 0; i < 13; i++) sum += (i % 2 === 0 ? 1 : 3) * Number(d[i]);
  return sum % 10 === 0;
}

export const CRD_FORMATS: Readonly<Record<string, (s: string) => boolean>> = {
  bsonobjectid: re(/^[0-9a-fA-F]{24}$/),
  uri: isUri,
  email: isEmail,
  hostname: re(HOSTNAME),
  ipv4: isIPv4,
  ipv6: isIPv6,
  cidr: isCidr,
  mac: re(MAC),
  uuid: re(UUID),
  uuid3: re(UUID3),
  uuid4: re(UUID4),
  uuid5: re(UUID5),
  isbn: (s) => isIsbn10(s) || isIsbn13(s),
  isbn10: isIsbn10,
  isbn13: isIsbn13,
  creditcard: (s) =>
    /^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$/.test(
      s.replace(/\D/g, ''),
    ),
  ssn: re(/^\d{3}[- ]?\d{2}[- ]?\d{4}$/),
  hexcolor: re(/^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/),
  rgbcolor: re(/^rgb\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\)$/),
  byte: re(BASE64),
  password: () => true,
  date: isDate,
  duration: re(DURATION),
  datetime: isDateTime,
};

/** The supported format a schema's `format` names, or undefined when Kubernetes ignores it. */
export function normalizeFormat(format: unknown): string | undefined {
  if (typeof format !== 'string') return undefined;
  const name = format.replaceAll('-', '');
  return Object.hasOwn(CRD_FORMATS, name) ? name : undefined;
}
