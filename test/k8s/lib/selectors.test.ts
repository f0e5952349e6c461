import fc from 'fast-check';
import t from 'tap';
import { isKubeLibError, KubeLibError } from '../../../src/k8s/errors.js';
import {
  escapeFieldValue,
  fieldExactMatch,
  formatFieldSelector,
  formatLabelSelector,
  type LabelRequirement,
  labelExactMatch,
  labelSelectorFromObject,
  matchFields,
  matchLabels,
  parseFieldSelector,
  parseLabelSelector,
} from '../../../src/k8s/selectors.js';

/** The Status message a selector error would put on the wire. */
function failure(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof KubeLibError) {
      if (e.httpCode !== 400 || e.reason !== 'BadRequest') throw e;
      return e.statusMessage;
    }
    throw e;
  }
  throw new Error('expected a failure');
}

const sel = (s: string, labels: Record<string, string>) =>
  matchLabels(parseLabelSelector(s), labels);

t.test('label selector operators match as Kubernetes does', async (t) => {
  const web = { app: 'web', tier: 'fe', version: '3' };
  t.ok(sel('', web), 'empty selects everything');
  t.ok(sel('   ', web), 'blank selects everything');
  t.ok(sel('app=web', web));
  t.ok(sel('app==web', web));
  t.notOk(sel('app=db', web));
  t.ok(sel('app!=db', web));
  t.ok(sel('missing!=x', web), '!= holds when the key is absent');
  t.ok(sel('app in (web,db)', web));
  t.notOk(sel('app in (db)', web));
  t.ok(sel('app notin (db)', web));
  t.ok(sel('missing notin (db)', web), 'notin holds when the key is absent');
  t.notOk(sel('app notin (web)', web));
  t.ok(sel('app', web), 'exists');
  t.notOk(sel('missing', web));
  t.ok(sel('!missing', web), 'does not exist');
  t.notOk(sel('!app', web));
  t.ok(sel('version>2', web));
  t.notOk(sel('version>3', web));
  t.ok(sel('version<4', web));
  t.notOk(sel('app>1', web), 'gt on a non-integer label value is false');
  t.notOk(sel('missing<1', web), 'lt on an absent key is false');
  t.ok(sel('app in (web,db),!touched,tier=fe', web), 'comma is AND');
  t.notOk(sel('app in (web,db),!tier', web));
  t.ok(sel('x=', { x: '' }), 'an empty value is allowed');
  t.notOk(sel('x=', {}), '= needs the key present');
  t.ok(sel('x in (,a)', { x: '' }), 'a leading comma in a set is the empty value');
  t.ok(sel('x in ()', { x: '' }), '() is the set holding the empty value');
  t.ok(sel('  app  in  ( web , db )  ', web), 'whitespace anywhere between tokens');
  t.ok(sel('in in (in)', { in: 'in' }), 'in and notin are identifiers in value positions');
  t.ok(sel('example.com/app=web', { 'example.com/app': 'web' }), 'prefixed keys');
});

t.test('label selector parse errors carry Kubernetes messages', async (t) => {
  const cases: [string, string][] = [
    ['app in web', "unable to parse requirement: found 'web' expected: '('"],
    ['app in (web', "unable to parse requirement: found '', expected: ',' or ')'"],
    ['app in (web db)', "unable to parse requirement: found 'db', expected: ',' or ')'"],
    ['app=web,', "found '', expected: identifier after ','"],
    ['app=web x', "found 'x', expected: ',' or 'end of string'"],
    ['=web', "found '=', expected: !, identifier, or 'end of string'"],
    ['!', "unable to parse requirement: found '', expected: identifier"],
    ['app=(', "unable to parse requirement: found '(', expected: identifier"],
    ['app in (=)', "unable to parse requirement: found '=', expected: ',', ')' or identifier"],
    ['app in (a,=)', "unable to parse requirement: found '=', expected: ',', or identifier"],
    ['!app=web', "found '=', expected: ',' or 'end of string'"],
    ['app x', "unable to parse requirement: found 'x', expected: in, notin, =, ==, !=, gt, lt"],
    [
      'app>-x',
      "unable to parse requirement: [values[0]: Invalid value: \"-x\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][app]: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]",
    ],
    [
      'app>1x',
      "unable to parse requirement: values[0]: Invalid value: \"1x\": for 'Gt', 'Lt' operators, the value must be an integer",
    ],
    [
      'app=-web',
      "unable to parse requirement: values[0][app]: Invalid value: \"-web\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ],
    [
      '-app=web',
      "unable to parse requirement: <nil>: Invalid value: \"-app\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ],
    [
      'Bad_/x=1',
      "unable to parse requirement: <nil>: Invalid value: \"Bad_/x\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ],
    [
      `${'k'.repeat(64)}=1`,
      `unable to parse requirement: <nil>: Invalid value: "${'k'.repeat(64)}": name part must be no more than 63 characters`,
    ],
  ];
  for (const [input, message] of cases)
    t.equal(
      failure(() => parseLabelSelector(input)),
      message,
      input,
    );
});

t.test('label requirements are sorted by key and round-trip through their text', async (t) => {
  const s = parseLabelSelector('z=1,a in (y,x,x),!m,k');
  t.same(
    s.requirements.map((r) => r.key),
    ['a', 'k', 'm', 'z'],
  );
  t.same(s.requirements[0]?.values, ['x', 'y'], 'set values sorted and de-duplicated');
  t.equal(formatLabelSelector(s), 'a in (x,y),k,!m,z=1');
  t.equal(labelExactMatch(parseLabelSelector('a in (x),b=2'), 'a'), 'x');
  t.equal(labelExactMatch(parseLabelSelector('a in (x),b=2'), 'b'), '2');
  t.equal(labelExactMatch(parseLabelSelector('a in (x,y),b!=2'), 'a'), undefined);
  t.equal(labelExactMatch(parseLabelSelector('a in (x,y),b!=2'), 'b'), undefined);
});

t.test('metav1.LabelSelector objects become selectors', async (t) => {
  const s = labelSelectorFromObject({
    matchLabels: { app: 'web' },
    matchExpressions: [
      { key: 'tier', operator: 'In', values: ['fe', 'be'] },
      { key: 'legacy', operator: 'DoesNotExist' },
    ],
  });
  t.ok(matchLabels(s, { app: 'web', tier: 'be' }));
  t.notOk(matchLabels(s, { app: 'web', tier: 'be', legacy: 'y' }));
  t.equal(formatLabelSelector(s), 'app=web,!legacy,tier in (be,fe)');
  t.throws(() => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'Near' }] }));
});

// --- properties ------------------------------------------------------------------------------------

const keyArb = fc.stringMatching(/^[a-z][a-z0-9]{0,6}(\.[a-z]{1,4}\/[a-z][a-z0-9]{0,4})?$/);
const valueArb = fc.stringMatching(/^([A-Za-z0-9]([-A-Za-z0-9_.]{0,6}[A-Za-z0-9])?)?$/);
const requirementArb: fc.Arbitrary<LabelRequirement> = fc.oneof(
  fc.record({
    key: keyArb,
    operator: fc.constantFrom('=' as const, '==' as const, '!=' as const),
    values: fc.tuple(valueArb),
  }),
  fc.record({
    key: keyArb,
    operator: fc.constantFrom('in' as const, 'notin' as const),
    values: fc.uniqueArray(valueArb, { minLength: 1, maxLength: 4 }).map((v) => [...v].sort()),
  }),
  fc.record({
    key: keyArb,
    operator: fc.constantFrom('exists' as const, '!' as const),
    values: fc.constant([]),
  }),
  fc.record({
    key: keyArb,
    operator: fc.constantFrom('gt' as const, 'lt' as const),
    values: fc.tuple(fc.integer({ min: 0, max: 1000 }).map(String)),
  }),
);

/** A direct model of the requirement semantics, written from the documentation. */
function model(r: LabelRequirement, labels: Record<string, string>): boolean {
  const v = labels[r.key];
  switch (r.operator) {
    case 'exists':
      return v !== undefined;
    case '!':
      return v === undefined;
    case '=':
    case '==':
    case 'in':
      return v !== undefined && r.values.includes(v);
    case '!=':
    case 'notin':
      return v === undefined || !r.values.includes(v);
    case 'gt':
    case 'lt':
      if (v === undefined || !/^-?\d+$/.test(v)) return false;
      return r.operator === 'gt'
        ? Number(v) > Number(r.values[0])
        : Number(v) < Number(r.values[0]);
  }
}

t.test('property: formatted selectors parse back to the same requirements', async (t) => {
  fc.assert(
    fc.property(fc.array(requirementArb, { maxLength: 5 }), (reqs) => {
      const text = formatLabelSelector({ requirements: reqs });
      const parsed = parseLabelSelector(text);
      const sorted = [...reqs].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      t.same(parsed.requirements, sorted);
      return true;
    }),
    { numRuns: 300 },
  );
});

t.test('property: matching is the conjunction of the requirement model', async (t) => {
  const labelsArb = fc.dictionary(
    fc.constantFrom('a', 'b', 'c.io/d'),
    fc.oneof(fc.constantFrom('', 'x', 'y', '5', '-3'), valueArb),
  );
  const reqArb = fc.oneof(
    fc.record({
      key: fc.constantFrom('a', 'b', 'c.io/d'),
      operator: fc.constantFrom('=' as const, '!=' as const, 'exists' as const, '!' as const),
      values: fc.constantFrom(['x'], ['y'], ['']),
    }),
    fc.record({
      key: fc.constantFrom('a', 'b', 'c.io/d'),
      operator: fc.constantFrom('in' as const, 'notin' as const),
      values: fc.constantFrom(['x', 'y'], [''], ['5']),
    }),
    fc.record({
      key: fc.constantFrom('a', 'b'),
      operator: fc.constantFrom('gt' as const, 'lt' as const),
      values: fc.constantFrom(['0'], ['4'], ['10']),
    }),
  );
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(fc.array(reqArb, { maxLength: 4 }), labelsArb, (reqs, labels) => {
          const text = formatLabelSelector({
            requirements: reqs.map((r) =>
              r.operator === 'exists' || r.operator === '!' ? { ...r, values: [] } : r,
            ),
          });
          const expected = reqs.every((r) =>
            model(r.operator === 'exists' || r.operator === '!' ? { ...r, values: [] } : r, labels),
          );
          return matchLabels(parseLabelSelector(text), labels) === expected;
        }),
        { numRuns: 500 },
      ),
    'matches the model',
  );
});

t.test('property: any input either parses or fails with a 400 BadRequest', async (t) => {
  const chars = fc.constantFrom(
    'a',
    'b',
    '=',
    '!',
    '(',
    ')',
    ',',
    ' ',
    'in',
    'notin',
    '>',
    '<',
    '-',
    '/',
    '.',
    '1',
  );
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(
          fc.array(chars, { maxLength: 20 }).map((a) => a.join('')),
          (s) => {
            try {
              parseLabelSelector(s);
            } catch (e) {
              return isKubeLibError(e, 'BadRequest');
            }
            return true;
          },
        ),
        { numRuns: 2000 },
      ),
    'no other failure',
  );
});

// --- field selectors -----------------------------------------------------------------------------------

const POD_FIELDS = new Set([
  'metadata.name',
  'metadata.namespace',
  'spec.nodeName',
  'status.phase',
]);

t.test('field selectors: operators, escapes, unsupported fields', async (t) => {
  const pod: Record<string, string> = {
    'metadata.name': 'web-1',
    'metadata.namespace': 'default',
    'status.phase': 'Running',
  };
  const get = (f: string) => pod[f];
  const fs = (s: string) => parseFieldSelector(s, POD_FIELDS);
  t.ok(matchFields(fs(''), get), 'empty selects everything');
  t.ok(matchFields(fs('metadata.name=web-1'), get));
  t.ok(matchFields(fs('metadata.name==web-1'), get));
  t.notOk(matchFields(fs('metadata.name!=web-1'), get));
  t.ok(matchFields(fs('status.phase=Running,metadata.namespace=default'), get));
  t.notOk(matchFields(fs('status.phase=Running,metadata.namespace=kube-system'), get));
  t.ok(matchFields(fs('spec.nodeName='), get), 'a missing field equals the empty string');
  t.notOk(matchFields(fs('spec.nodeName!='), get));
  t.ok(
    matchFields(fs('metadata.name=,'), (f) => (f === 'metadata.name' ? '' : 'x')),
    'empty terms skipped',
  );

  const esc = parseFieldSelector('metadata.name=a\\,b\\=c\\\\d', POD_FIELDS);
  t.equal(esc.requirements[0]?.value, 'a,b=c\\d');
  t.equal(formatFieldSelector(esc), 'metadata.name=a\\,b\\=c\\\\d');
  t.equal(escapeFieldValue('a,b=c\\'), 'a\\,b\\=c\\\\');

  t.equal(
    failure(() => fs('foo.bar=1')),
    'field label not supported: foo.bar',
  );
  t.equal(
    failure(() => fs('metadata.name=a,zz=1,aa=2')),
    'field label not supported: aa',
    'the first unsupported field in sorted term order',
  );
  t.equal(
    failure(() => fs('metadata.name')),
    "invalid selector: 'metadata.name'; can't understand 'metadata.name'",
  );
  t.equal(
    failure(() => fs('metadata.name=a\\x')),
    'invalid field selector: invalid escape sequence: \\x',
  );
  t.equal(
    failure(() => fs('metadata.name=a\\')),
    'invalid field selector: invalid escape sequence: \\',
  );
  t.equal(
    failure(() => fs('metadata.name=a=b')),
    'invalid field selector: unescaped character in value: 61',
    'Go prints the rune as its number',
  );
  t.equal(
    failure(() => fs('bogus=a\\q')),
    'invalid field selector: invalid escape sequence: \\q',
    'parse errors first',
  );
  t.ok(
    parseFieldSelector('anything=1', () => true),
    'a predicate may accept any field',
  );
  t.equal(fieldExactMatch(fs('spec.nodeName=n1,status.phase!=Failed'), 'spec.nodeName'), 'n1');
  t.equal(fieldExactMatch(fs('status.phase!=Failed'), 'status.phase'), undefined);
  t.equal(
    fs('a!=b'.replace('a', 'status.phase')).requirements[0]?.operator,
    '!=',
    '!= wins over =',
  );
});

t.test('property: escaped field values round-trip', async (t) => {
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(fc.string({ maxLength: 12 }), (v) => {
          const s = parseFieldSelector(`metadata.name=${escapeFieldValue(v)}`, POD_FIELDS);
          return s.requirements.length === 1 && s.requirements[0]?.value === v;
        }),
        { numRuns: 500 },
      ),
    'the property holds',
  );
});
