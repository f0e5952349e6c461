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
import { badRequest } from './errors.js';
import { goQuote } from './field-errors.js';
import {
  compareBytes,
  LabelOperator,
  type LabelRequirement,
  parseInt64,
  parseRequirements,
} from './label-selector-parser.js';

export {
  escapeFieldValue,
  FieldOperator,
  type FieldRequirement,
  type FieldSelector,
  fieldExactMatch,
  formatFieldSelector,
  matchFields,
  parseFieldSelector,
  type SupportedFields,
  unescapeFieldValue,
} from './field-selector.js';
export {
  LabelOperator,
  type LabelRequirement,
  type SelectorError,
} from './label-selector-parser.js';

export interface LabelSelector {
  /** Sorted by key; an empty list matches everything. */
  readonly requirements: readonly LabelRequirement[];
}

export type Labels = Readonly<Record<string, string>> | undefined | null;

// --- label selector API ------------------------------------------------------------------------------

/** Parses a label selector; the empty (or blank) string selects everything. */
export function parseLabelSelector(s: string): LabelSelector {
  const requirements = parseRequirements(s);
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
