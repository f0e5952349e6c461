/**
 * Field selectors as Kubernetes parses them (apimachinery's fields.ParseSelector): terms
 * `field=value`, `field==value`, `field!=value` joined by unescaped commas, values with
 * `\,`, `\=` and `\\` escapes. Terms are sorted as text before parsing, so the
 * first unsupported field reported is the first in that order, as in Kubernetes.
 */
import { badRequest } from './errors.js';
import { compareBytes } from './label-selector-parser.js';

export const FieldOperator = { Equals: '=', DoubleEquals: '==', NotEquals: '!=' } as const;
export type FieldOperator = (typeof FieldOperator)[keyof typeof FieldOperator];

export interface FieldRequirement {
  readonly field: string;
  readonly operator: FieldOperator;
  /** Unescaped. */
  readonly value: string;
}

export interface FieldSelector {
  /** In the order of their terms' text, as Kubernetes sorts them. */
  readonly requirements: readonly FieldRequirement[];
}

export type SupportedFields = ReadonlySet<string> | ((field: string) => boolean);

/** Splits on commas that are not escaped with a backslash. */
function splitTerms(s: string): string[] {
  if (s.length === 0) return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  return terms;
}

/** The first operator occurrence, trying `!=`, `==`, `=` at each position from the left. */
function splitTerm(term: string): [string, FieldOperator, string] | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of ['!=', '==', '='] as const) {
      if (term.startsWith(op, i)) return [term.slice(0, i), op, term.slice(i + op.length)];
    }
  }
  return undefined;
}

/** Kubernetes' value unescaping: `\\`, `\,`, `\=`; a bare `,` or `=` is an error. */
export function unescapeFieldValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c !== '\\' && c !== ',' && c !== '=') {
        throw badRequest(`invalid field selector: invalid escape sequence: \\${c}`);
      }
      out += c;
      inSlash = false;
    } else if (c === '\\') inSlash = true;
    else if (c === ',' || c === '=') {
      // Go prints the rune with %v: its code point number.
      throw badRequest(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    } else out += c;
  }
  if (inSlash) throw badRequest('invalid field selector: invalid escape sequence: \\');
  return out;
}

export function escapeFieldValue(s: string): string {
  return s.replace(/[\\,=]/g, (c) => `\\${c}`);
}

/**
 * Parses a field selector and checks every field against the kind's supported fields
 * (after all terms parsed, first unsupported in term order: what Kubernetes reports).
 */
export function parseFieldSelector(s: string, supported: SupportedFields): FieldSelector {
  const isSupported = typeof supported === 'function' ? supported : (f: string) => supported.has(f);
  // Kubernetes sorts the term texts (byte order) before parsing.
  const terms = splitTerms(s).sort(compareBytes);
  const requirements: FieldRequirement[] = [];
  for (const term of terms) {
    if (term === '') continue;
    const parts = splitTerm(term);
    if (!parts) throw badRequest(`invalid selector: '${s}'; can't understand '${term}'`);
    const [field, operator, raw] = parts;
    requirements.push({ field, operator, value: unescapeFieldValue(raw) });
  }
  for (const r of requirements) {
    if (!isSupported(r.field)) throw badRequest(`field label not supported: ${r.field}`);
  }
  return { requirements };
}

/**
 * True when every term holds. `getField` returns the object's value for a supported field
 * path; a missing value compares as the empty string, as in Kubernetes.
 */
export function matchFields(
  selector: FieldSelector,
  getField: (path: string) => string | undefined,
): boolean {
  for (const r of selector.requirements) {
    const have = getField(r.field) ?? '';
    if (r.operator === FieldOperator.NotEquals ? have === r.value : have !== r.value) return false;
  }
  return true;
}

/** The value a field selector pins `field` to (`field=v` or `field==v`), if any. */
export function fieldExactMatch(selector: FieldSelector, field: string): string | undefined {
  for (const r of selector.requirements) {
    if (r.field === field && r.operator !== FieldOperator.NotEquals) return r.value;
  }
  return undefined;
}

export function formatFieldSelector(selector: FieldSelector): string {
  return selector.requirements
    .map((r) => `${r.field}${r.operator === '!=' ? '!=' : '='}${escapeFieldValue(r.value)}`)
    .join(',');
}
