/**
 * The label selector grammar as Kubernetes parses it (apimachinery's labels.Parse): a lexer
 * that takes the longest run of operator symbols, a recursive-descent parser in which `in`
 * and `notin` are identifiers in value positions, and Kubernetes' messages for every
 * failure (they reach clients verbatim in 400 answers).
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
export function parseInt64(s: string): bigint | undefined {
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

/** Byte order (Go's string order), for value sets and term lists. */
export function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The requirements of a selector text, in text order (400 BadRequest when malformed). */
export function parseRequirements(s: string): LabelRequirement[] {
  return parseSelector(s);
}
