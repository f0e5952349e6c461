/**
 * Label and field selectors with Kubernetes' syntax, matching and error texts.
 *
 * Label selectors (`app in (web,db),!touched,tier=fe,version>2`): requirements joined by
 * commas (AND). Operators: `=`, `==`, `!=`, `in (...)`, `notin (...)`, `key` (exists),
 * `!key` (does not exist), and `>`/`<` with integer values. Keys are qualified names, values
 * label values; a parse or validation failure is a 400 BadRequest whose message is
 * Kubernetes' (`unable to parse requirement: found '', expected: identifier`).
 *
 * Field selectors (`metadata.name=web,status.phase!=Running`): `=`, `==`, `!=` terms joined
 * by commas, values with `\,`, `\=` and `\\` escapes; a field the kind does not support is
 * the 400 `field label not supported: <field>`.
 */
import { badRequest, type KubeLibError } from './errors.js';
import { aggregateMessages, goQuote, goValue } from './field-errors.js';
import { validateLabelValue, validateQualifiedName } from './names.js';

export const LabelOperator = {
  In: 'in',
  NotIn: 'notin',
  Equals: '=',
  DoubleEquals: '==',
  NotEquals: '!=',
  Exists: 'exists',
  DoesNotExist: '!',
  GreaterThan: 'gt',
  LessThan: 'lt',
} as const;
export type LabelOperator = (typeof LabelOperator)[keyof typeof LabelOperator];

export interface LabelRequirement {
  readonly key: string;
  readonly operator: LabelOperator;
  /** Sorted, without duplicates (empty for exists / does-not-exist). */
  readonly values: readonly string[];
}

export interface LabelSelector {
  /** Sorted by key; an empty list matches everything. */
  readonly requirements: readonly LabelRequirement[];
}

export type Labels = Readonly<Record<string, string>> | undefined | null;

/** Raised for any malformed selector; `toStatus()` is the 400 the server answers. */
export type SelectorError = KubeLibError;

// --- lexer ----------------------------------------------------------------------------------------

const Tok = {
  Error: 0,
  End: 1,
  ClosedPar: 2,
  Comma: 3,
  DoesNotExist: 4,
  DoubleEquals: 5,
  Equals: 6,
  GreaterThan: 7,
  Identifier: 8,
  In: 9,
  LessThan: 10,
  NotEquals: 11,
  NotIn: 12,
  OpenPar: 13,
} as const;
type Tok = (typeof Tok)[keyof typeof Tok];

const KEYWORDS: Record<string, Tok> = {
  ')': Tok.ClosedPar,
  ',': Tok.Comma,
  '!': Tok.DoesNotExist,
  '==': Tok.DoubleEquals,
  '=': Tok.Equals,
  '>': Tok.GreaterThan,
  in: Tok.In,
  '<': Tok.LessThan,
  '!=': Tok.NotEquals,
  notin: Tok.NotIn,
  '(': Tok.OpenPar,
};

interface Item {
  tok: Tok;
  lit: string;
}

const isWhitespace = (c: string): boolean => c === ' ' || c === '\t' || c === '\r' || c === '\n';
const isSpecial = (c: string): boolean => '=!(),<>'.includes(c);

/** Splits the selector into tokens: maximal runs of special symbols, identifiers, keywords. */
function lex(s: string): Item[] {
  const items: Item[] = [];
  let pos = 0;
  for (;;) {
    while (pos < s.length && isWhitespace(s[pos] as string)) pos++;
    if (pos >= s.length) {
      items.push({ tok: Tok.End, lit: '' });
      return items;
    }
    if (isSpecial(s[pos] as string)) {
      // The longest run of special symbols that is still an operator.
      let best: Item | undefined;
      let end = pos;
      let buf = '';
      while (end < s.length && isSpecial(s[end] as string)) {
        buf += s[end];
        const tok = KEYWORDS[buf];
        if (tok !== undefined) best = { tok, lit: buf };
        else if (best) break;
        end++;
      }
      if (!best) {
        items.push({ tok: Tok.Error, lit: `error expected: keyword found '${buf}'` });
        pos = end;
        continue;
      }
      items.push(best);
      pos += best.lit.length;
      continue;
    }
    let end = pos;
    while (end < s.length && !isSpecial(s[end] as string) && !isWhitespace(s[end] as string)) {
      end++;
    }
    const lit = s.slice(pos, end);
    items.push({ tok: KEYWORDS[lit] ?? Tok.Identifier, lit });
    pos = end;
  }
}

// --- parser ---------------------------------------------------------------------------------------

/** In a value position `in` and `notin` are plain identifiers (`x in (in)`). */
const Context = { KeyAndOperator: 0, Values: 1 } as const;
type Context = (typeof Context)[keyof typeof Context];

class Parser {
  private position = 0;
  constructor(private readonly items: Item[]) {}

  lookahead(ctx: Context): Item {
    return this.asContext(this.items[this.position] as Item, ctx);
  }

  consume(ctx: Context): Item {
    const item = this.items[this.position] as Item;
    // The End item is never consumed past: the parser stops on it.
    if (this.position < this.items.length - 1) this.position++;
    return this.asContext(item, ctx);
  }

  private asContext(item: Item, ctx: Context): Item {
    if (ctx === Context.Values && (item.tok === Tok.In || item.tok === Tok.NotIn)) {
      return { tok: Tok.Identifier, lit: item.lit };
    }
    return item;
  }
}

/** A parse failure: Kubernetes' message without the `unable to parse requirement` prefix. */
class ParseFailure {
  constructor(readonly message: string) {}
}

function parseSelector(s: string): LabelRequirement[] {
  const p = new Parser(lex(s));
  const reqs: LabelRequirement[] = [];
  for (;;) {
    const { tok, lit } = p.lookahead(Context.Values);
    if (tok === Tok.Identifier || tok === Tok.DoesNotExist) {
      const r = parseRequirement(p);
      if (r instanceof ParseFailure) {
        throw badRequest(`unable to parse requirement: ${r.message}`);
      }
      reqs.push(r);
      const next = p.consume(Context.Values);
      if (next.tok === Tok.End) return reqs;
      if (next.tok !== Tok.Comma) {
        throw badRequest(`found '${next.lit}', expected: ',' or 'end of string'`);
      }
      const after = p.lookahead(Context.Values);
      if (after.tok !== Tok.Identifier && after.tok !== Tok.DoesNotExist) {
        throw badRequest(`found '${after.lit}', expected: identifier after ','`);
      }
    } else if (tok === Tok.End) {
      return reqs;
    } else {
      throw badRequest(`found '${lit}', expected: !, identifier, or 'end of string'`);
    }
  }
}

function parseRequirement(p: Parser): LabelRequirement | ParseFailure {
  let operator: LabelOperator | undefined;
  let item = p.consume(Context.Values);
  if (item.tok === Tok.DoesNotExist) {
    operator = LabelOperator.DoesNotExist;
    item = p.consume(Context.Values);
  }
  if (item.tok !== Tok.Identifier)
    return new ParseFailure(`found '${item.lit}', expected: identifier`);
  const key = item.lit;
  const keyErrs = validateQualifiedName(key);
  if (keyErrs.length > 0) {
    // Kubernetes validates the key here with no field path, hence `<nil>`.
    return new ParseFailure(`<nil>: Invalid value: ${goQuote(key)}: ${keyErrs.join('; ')}`);
  }
  const next = p.lookahead(Context.Values).tok;
  if ((next === Tok.End || next === Tok.Comma) && operator === undefined) {
    operator = LabelOperator.Exists;
  }
  if (operator !== undefined) return { key, operator, values: [] };

  const opItem = p.consume(Context.KeyAndOperator);
  const op = BINARY_OPERATORS.get(opItem.tok);
  if (op === undefined) {
    return new ParseFailure(`found '${opItem.lit}', expected: in, notin, =, ==, !=, gt, lt`);
  }
  const values =
    op === LabelOperator.In || op === LabelOperator.NotIn ? parseValues(p) : parseExactValue(p);
  if (values instanceof ParseFailure) return values;
  return newRequirement(key, op, [...values].sort(compareBytes));
}

const BINARY_OPERATORS: ReadonlyMap<Tok, LabelOperator> = new Map<Tok, LabelOperator>([
  [Tok.In, LabelOperator.In],
  [Tok.Equals, LabelOperator.Equals],
  [Tok.DoubleEquals, LabelOperator.DoubleEquals],
  [Tok.GreaterThan, LabelOperator.GreaterThan],
  [Tok.LessThan, LabelOperator.LessThan],
  [Tok.NotIn, LabelOperator.NotIn],
  [Tok.NotEquals, LabelOperator.NotEquals],
]);

function parseValues(p: Parser): Set<string> | ParseFailure {
  const open = p.consume(Context.Values);
  if (open.tok !== Tok.OpenPar) return new ParseFailure(`found '${open.lit}' expected: '('`);
  const first = p.lookahead(Context.Values);
  if (first.tok === Tok.Identifier || first.tok === Tok.Comma) {
    const set = parseIdentifierList(p);
    if (set instanceof ParseFailure) return set;
    // Kubernetes reports the first token of the list here, not the offending one.
    if (p.consume(Context.Values).tok !== Tok.ClosedPar) {
      return new ParseFailure(`found '${first.lit}', expected: ')'`);
    }
    return set;
  }
  if (first.tok === Tok.ClosedPar) {
    p.consume(Context.Values);
    return new Set(['']);
  }
  return new ParseFailure(`found '${first.lit}', expected: ',', ')' or identifier`);
}

/** `(a,b)`, `(,a)`, `(a,,b)`: empty entries are the empty value. */
function parseIdentifierList(p: Parser): Set<string> | ParseFailure {
  const set = new Set<string>();
  for (;;) {
    const item = p.consume(Context.Values);
    if (item.tok === Tok.Identifier) {
      set.add(item.lit);
      const next = p.lookahead(Context.Values);
      if (next.tok === Tok.Comma) continue;
      if (next.tok === Tok.ClosedPar) return set;
      return new ParseFailure(`found '${next.lit}', expected: ',' or ')'`);
    }
    if (item.tok === Tok.Comma) {
      if (set.size === 0) set.add('');
      const next = p.lookahead(Context.Values).tok;
      if (next === Tok.ClosedPar) {
        set.add('');
        return set;
      }
      if (next === Tok.Comma) {
        p.consume(Context.Values);
        set.add('');
      }
      continue;
    }
    return new ParseFailure(`found '${item.lit}', expected: ',', or identifier`);
  }
}

function parseExactValue(p: Parser): Set<string> | ParseFailure {
  const next = p.lookahead(Context.Values).tok;
  if (next === Tok.End || next === Tok.Comma) return new Set(['']);
  const item = p.consume(Context.Values);
  if (item.tok === Tok.Identifier) return new Set([item.lit]);
  return new ParseFailure(`found '${item.lit}', expected: identifier`);
}

const INT64_RE = /^[+-]?[0-9]+$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Go's strconv.ParseInt(s, 10, 64), as a bigint, or undefined when it fails. */
function parseInt64(s: string): bigint | undefined {
  if (!INT64_RE.test(s)) return undefined;
  const v = BigInt(s);
  return v < INT64_MIN || v > INT64_MAX ? undefined : v;
}

/** Validates values as Kubernetes' NewRequirement does; errors aggregated in its format. */
function newRequirement(
  key: string,
  operator: LabelOperator,
  values: string[],
): LabelRequirement | ParseFailure {
  const errs: string[] = [];
  if (operator === LabelOperator.GreaterThan || operator === LabelOperator.LessThan) {
    values.forEach((v, i) => {
      if (parseInt64(v) === undefined) {
        errs.push(
          `values[${i}]: Invalid value: ${goQuote(v)}: for 'Gt', 'Lt' operators, the value must be an integer`,
        );
      }
    });
  }
  values.forEach((v, i) => {
    const msgs = validateLabelValue(v);
    if (msgs.length > 0) {
      errs.push(`values[${i}][${key}]: Invalid value: ${goValue(v)}: ${msgs.join('; ')}`);
    }
  });
  if (errs.length > 0) return new ParseFailure(aggregateMessages(errs));
  return { key, operator, values };
}

// --- label selector API ------------------------------------------------------------------------------

/** Parses a label selector; the empty (or blank) string selects everything. */
export function parseLabelSelector(s: string): LabelSelector {
  const requirements = parseSelector(s);
  // Sorted by key as Kubernetes does (stable, so equal keys keep their order).
  requirements.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { requirements };
}

export function matchRequirement(r: LabelRequirement, labels: Labels): boolean {
  const has = labels != null && Object.hasOwn(labels, r.key);
  const value = has ? (labels as Record<string, string>)[r.key] : undefined;
  switch (r.operator) {
    case LabelOperator.In:
    case LabelOperator.Equals:
    case LabelOperator.DoubleEquals:
      return has && r.values.includes(value as string);
    case LabelOperator.NotIn:
    case LabelOperator.NotEquals:
      return !has || !r.values.includes(value as string);
    case LabelOperator.Exists:
      return has;
    case LabelOperator.DoesNotExist:
      return !has;
    case LabelOperator.GreaterThan:
    case LabelOperator.LessThan: {
      if (!has || r.values.length !== 1) return false;
      const have = parseInt64(value as string);
      const want = parseInt64(r.values[0] as string);
      if (have === undefined || want === undefined) return false;
      return r.operator === LabelOperator.GreaterThan ? have > want : have < want;
    }
  }
}

/** True when every requirement holds for the labels (an empty selector matches all). */
export function matchLabels(selector: LabelSelector, labels: Labels): boolean {
  for (const r of selector.requirements) if (!matchRequirement(r, labels)) return false;
  return true;
}

/**
 * The value a selector pins `key` to (`key=v`, `key==v`, `key in (v)`), if any: lets a
 * watch index use one bucket instead of testing every object.
 */
export function labelExactMatch(selector: LabelSelector, key: string): string | undefined {
  for (const r of selector.requirements) {
    if (r.key !== key || r.values.length !== 1) continue;
    if (r.operator === 'in' || r.operator === '=' || r.operator === '==') return r.values[0];
  }
  return undefined;
}

const OP_TEXT: Record<LabelOperator, string> = {
  in: ' in ',
  notin: ' notin ',
  '=': '=',
  '==': '==',
  '!=': '!=',
  exists: '',
  '!': '',
  gt: '>',
  lt: '<',
};

/** The canonical text of a selector (Kubernetes' String()): parses back to the same. */
export function formatLabelSelector(selector: LabelSelector): string {
  return selector.requirements
    .map((r) => {
      const prefix = r.operator === LabelOperator.DoesNotExist ? '!' : '';
      if (r.operator === LabelOperator.Exists || r.operator === LabelOperator.DoesNotExist) {
        return prefix + r.key;
      }
      const vals = r.values.join(',');
      const body = r.operator === 'in' || r.operator === 'notin' ? `(${vals})` : vals;
      return r.key + OP_TEXT[r.operator] + body;
    })
    .join(',');
}

/**
 * A metav1.LabelSelector (`{matchLabels, matchExpressions}`, as in Deployment.spec.selector)
 * as a selector. Operators are `In`, `NotIn`, `Exists`, `DoesNotExist`.
 */
export function labelSelectorFromObject(obj: {
  matchLabels?: Record<string, string> | null;
  matchExpressions?:
    | readonly { key: string; operator: string; values?: readonly string[] | null }[]
    | null;
}): LabelSelector {
  const reqs: LabelRequirement[] = [];
  for (const [key, value] of Object.entries(obj.matchLabels ?? {})) {
    reqs.push({ key, operator: LabelOperator.Equals, values: [value] });
  }
  for (const e of obj.matchExpressions ?? []) {
    const op = EXPRESSION_OPERATORS[e.operator];
    if (op === undefined)
      throw badRequest(`${goQuote(e.operator)} is not a valid label selector operator`);
    reqs.push({
      key: e.key,
      operator: op,
      values: [...new Set(e.values ?? [])].sort(compareBytes),
    });
  }
  reqs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { requirements: reqs };
}

const EXPRESSION_OPERATORS: Record<string, LabelOperator> = {
  In: LabelOperator.In,
  NotIn: LabelOperator.NotIn,
  Exists: LabelOperator.Exists,
  DoesNotExist: LabelOperator.DoesNotExist,
};

// --- field selectors ---------------------------------------------------------------------------------

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

function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
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
