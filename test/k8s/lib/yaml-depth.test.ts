/**
 * The raw-text nesting bound for YAML bodies: never below the depth the `yaml` parser builds
 * (property-tested against the parser itself), and refusing hostile bodies without parsing.
 */
import fc from 'fast-check';
import t from 'tap';
import { Document, parseAllDocuments } from 'yaml';
import { yamlNestsDeeperThan } from '../../../src/k8s/yaml-depth.js';

/** Nesting of objects and arrays in a parsed value (the body depth limit counts these). */
function depthOf(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  let d = 0;
  const children = Array.isArray(v)
    ? v
    : v instanceof Map
      ? [...v.keys(), ...v.values()]
      : Object.values(v);
  for (const c of children) d = Math.max(d, depthOf(c));
  return d + 1;
}

/** The deepest document the parser builds from `text`, or undefined when it cannot. */
function parsedDepth(text: string): number | undefined {
  try {
    let max = 0;
    for (const doc of parseAllDocuments(text)) {
      max = Math.max(max, depthOf(doc.toJS({ maxAliasCount: -1, mapAsMap: true })));
    }
    return max;
  } catch {
    return undefined;
  }
}

/**
 * What the scan promises: a text it lets through builds at most twice the limit (plus one)
 * levels, even where the parser's error recovery adds levels the scan does not model. The
 * exact limit is checked again on the parsed value; the scan only has to keep the parser's
 * work bounded by the limit rather than by the body size.
 */
function assertBound(text: string, limit: number): boolean {
  const parsed = parsedDepth(text);
  if (parsed === undefined || parsed <= 2 * limit + 1) return true;
  return yamlNestsDeeperThan(text, limit);
}

/** For well-formed YAML the scan is a true upper bound. */
function assertExactBound(text: string, limit: number): boolean {
  const parsed = parsedDepth(text);
  if (parsed === undefined || parsed <= limit) return true;
  return yamlNestsDeeperThan(text, limit);
}

const tricky = fc.constantFrom(
  '[',
  ']',
  '{',
  '}',
  '"',
  "'",
  ': ',
  '- ',
  '#',
  ' #',
  '|',
  '>',
  ',',
  '\\',
  'a',
  ' ',
  '\n',
  '\n  ',
  '? ',
  '&x ',
  '!t ',
  '---\n',
);

t.test('the bound is never below what the parser builds: YAML written by the library', (t) => {
  const value = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.oneof(fc.string({ unit: tricky, maxLength: 6 }), fc.integer(), fc.constant(null)),
      fc.array(tie('node'), { maxLength: 3 }),
      fc.dictionary(fc.string({ unit: tricky, maxLength: 4 }), tie('node'), { maxKeys: 3 }),
    ),
  })).node;
  const style = fc.record({
    collectionStyle: fc.constantFrom('any', 'block', 'flow'),
    defaultStringType: fc.constantFrom('PLAIN', 'QUOTE_DOUBLE', 'QUOTE_SINGLE', 'BLOCK_LITERAL'),
    indent: fc.integer({ min: 1, max: 4 }),
    indentSeq: fc.boolean(),
  });
  fc.assert(
    fc.property(value, style, fc.integer({ min: 1, max: 6 }), (v, s, limit) => {
      const text = new Document(v).toString({
        collectionStyle: s.collectionStyle as 'any' | 'block' | 'flow',
        defaultStringType: s.defaultStringType as 'PLAIN',
        indent: s.indent,
        indentSeq: s.indentSeq,
      });
      return assertExactBound(text, limit);
    }),
    { numRuns: 3000 },
  );
  t.end();
});

t.test('on arbitrary text the parser builds at most about twice the bound', (t) => {
  fc.assert(
    fc.property(
      fc.string({ unit: tricky, maxLength: 60 }),
      fc.integer({ min: 1, max: 6 }),
      assertBound,
    ),
    { numRuns: 8000 },
  );
  t.end();
});

t.test('ordinary objects are far from the limit', (t) => {
  const deployment = [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata: {name: web, labels: {app: web}}',
    'spec:',
    '  template:',
    '    spec:',
    '      containers:',
    '      - name: web',
    '        image: "nginx:1.27"   # [pinned',
    '        command: [sh, -c, "echo [ok]"]',
    '        args:',
    '          - |',
    '            [[[ not YAML, a script ]]]',
    '            {',
  ].join('\n');
  t.equal(parsedDepth(deployment), 7);
  t.equal(yamlNestsDeeperThan(deployment, 200), false);
  t.equal(yamlNestsDeeperThan(deployment, 6), true, 'and the bound is close to the real depth');
  t.end();
});

t.test('hostile bodies are refused from the raw text', (t) => {
  const mib = 1400 * 1024;
  for (const [name, text] of [
    ['nested flow sequences', `a: ${'['.repeat(mib)}`],
    ['nested flow mappings', `{a: ${'{a: '.repeat(mib / 4)}`],
    ['compact block sequences', `${'- '.repeat(mib / 2)}x`],
    ['indented mappings', Array.from({ length: 1500 }, (_, i) => `${' '.repeat(i)}k:`).join('\n')],
  ] as const) {
    t.equal(yamlNestsDeeperThan(text, 200), true, name);
  }
  t.equal(
    yamlNestsDeeperThan(`${'['.repeat(200)}${']'.repeat(200)}`, 200),
    false,
    '200 is allowed',
  );
  t.equal(yamlNestsDeeperThan(`${'['.repeat(201)}${']'.repeat(201)}`, 200), true, '201 is not');
  t.end();
});
