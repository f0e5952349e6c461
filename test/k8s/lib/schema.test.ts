import fc from 'fast-check';
import t from 'tap';
import { KubeLibError } from '../../../src/k8s/errors.js';
import { fieldErrorString, toCause } from '../../../src/k8s/field-errors.js';
import { cloneJson, type JsonMap } from '../../../src/k8s/json.js';
import {
  compileCrdSchema,
  strictDecodingMessage,
  structuralSchemaErrors,
  unknownFieldWarnings,
} from '../../../src/k8s/schema.js';

/** The Widget schema of a recorded CRD example, with most keywords in use. */
const widgetSchema = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      required: ['size'],
      properties: {
        size: { type: 'integer', minimum: 1, maximum: 10 },
        color: { type: 'string', enum: ['red', 'blue'], default: 'red' },
        name: { type: 'string', pattern: '^[a-z]+$', minLength: 2, maxLength: 5 },
        parts: { type: 'array', items: { type: 'string' }, maxItems: 3, minItems: 1 },
        port: { 'x-kubernetes-int-or-string': true },
        ratio: { type: 'number', exclusiveMinimum: true, minimum: 0, multipleOf: 0.5 },
        when: { type: 'string', format: 'date-time' },
        note: { type: 'string', nullable: true },
        labels: { type: 'object', additionalProperties: { type: 'string' }, maxProperties: 2 },
        free: {
          type: 'object',
          'x-kubernetes-preserve-unknown-fields': true,
          properties: { known: { type: 'integer' } },
        },
        template: {
          type: 'object',
          'x-kubernetes-embedded-resource': true,
          'x-kubernetes-preserve-unknown-fields': true,
        },
        items: {
          type: 'array',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
          items: {
            type: 'object',
            required: ['name'],
            properties: { name: { type: 'string' }, weight: { type: 'integer', default: 1 } },
          },
        },
        settings: {
          type: 'object',
          default: {},
          properties: { retries: { type: 'integer', default: 3 }, mode: { type: 'string' } },
        },
        choice: { type: 'string', anyOf: [{ pattern: '^a' }, { pattern: '^b' }] },
        tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
        strategy: {
          type: 'object',
          'x-kubernetes-map-type': 'atomic',
          properties: { type: { type: 'string' } },
        },
      },
    },
    status: { type: 'object', properties: { ready: { type: 'boolean' } } },
  },
};

const widget = (spec: JsonMap): JsonMap => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w1', namespace: 'default' },
  spec,
});

const compiled = compileCrdSchema(widgetSchema);
const errorsOf = (spec: JsonMap) => compiled.validate(widget(spec)).map(fieldErrorString);

t.test('a valid object has no errors', async (t) => {
  t.same(
    errorsOf({
      size: 3,
      color: 'blue',
      name: 'abc',
      parts: ['a'],
      port: 'http',
      ratio: 1.5,
      when: '2024-05-01T10:00:00Z',
      note: null,
      labels: { a: 'b' },
      free: { anything: [1, 2], known: 1 },
      template: { apiVersion: 'v1', kind: 'Pod', spec: {} },
      items: [{ name: 'x', weight: 2 }],
      choice: 'apple',
    }),
    [],
  );
  t.same(errorsOf({ size: 1, port: 8080 }), [], 'int-or-string takes an integer');
});

t.test('field errors carry kube-apiserver texts', async (t) => {
  t.same(errorsOf({}), ['spec.size: Required value']);
  t.same(errorsOf({ size: 'big' }), [
    'spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"',
  ]);
  t.same(errorsOf({ size: 1.5 }), [
    'spec.size: Invalid value: "number": spec.size in body must be of type integer: "number"',
  ]);
  t.same(errorsOf({ size: 0 }), [
    'spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1',
  ]);
  t.same(errorsOf({ size: 11 }), [
    'spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10',
  ]);
  t.same(errorsOf({ size: 1, color: 'green' }), [
    'spec.color: Unsupported value: "green": supported values: "red", "blue"',
  ]);
  t.same(errorsOf({ size: 1, name: 'ABC' }), [
    'spec.name: Invalid value: "ABC": spec.name in body should match \'^[a-z]+$\'',
  ]);
  t.same(errorsOf({ size: 1, name: 'a' }), [
    'spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long',
  ]);
  t.same(errorsOf({ size: 1, name: 'abcdef' }), [
    'spec.name: Too long: may not be more than 5 bytes',
  ]);
  t.same(errorsOf({ size: 1, parts: ['a', 'b', 'c', 'd'] }), [
    'spec.parts: Too many: 4: must have at most 3 items',
  ]);
  t.same(errorsOf({ size: 1, parts: [] }), [
    'spec.parts: Invalid value: 0: spec.parts in body should have at least 1 items',
  ]);
  t.same(errorsOf({ size: 1, parts: ['a', 2] }), [
    'spec.parts[1]: Invalid value: "integer": spec.parts[1] in body must be of type string: "integer"',
  ]);
  t.same(errorsOf({ size: 1, port: true }), [
    'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
  ]);
  t.same(errorsOf({ size: 1, ratio: 0 }), [
    'spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0',
  ]);
  t.same(errorsOf({ size: 1, ratio: 0.7 }), [
    'spec.ratio: Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5',
  ]);
  t.same(errorsOf({ size: 1, when: 'yesterday' }), [
    'spec.when: Invalid value: "yesterday": spec.when in body must be of type datetime: "yesterday"',
  ]);
  t.same(errorsOf({ size: 1, labels: { a: 'x', b: 'y', c: 'z' } }), [
    'spec.labels: Too many: 3: must have at most 2 items',
  ]);
  t.same(errorsOf({ size: 1, labels: { a: 1 } }), [
    'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"',
  ]);
  t.same(errorsOf({ size: 1, items: [{ weight: 1 }] }), ['spec.items[0].name: Required value']);
  t.same(errorsOf({ size: 1, choice: 'cherry' }), [
    '<nil>: Invalid value: "": "spec.choice" must validate at least one schema (anyOf)',
  ]);
  t.same(errorsOf({ size: 1, template: { spec: {} } }), [
    'spec.template.apiVersion: Required value: must not be empty',
    'spec.template.kind: Required value: must not be empty',
  ]);
  t.same(errorsOf({ size: 1, free: { known: 'x' } }), [
    'spec.free.known: Invalid value: "string": spec.free.known in body must be of type integer: "string"',
  ]);
  const causes = compiled.validate(widget({ size: 'x' })).map(toCause);
  t.same(causes, [
    {
      reason: 'FieldValueTypeInvalid',
      message: 'Invalid value: "string": spec.size in body must be of type integer: "string"',
      field: 'spec.size',
    },
  ]);
});

t.test(
  'unknown fields are found, reported and pruned; metadata keeps ObjectMeta fields',
  async (t) => {
    const obj = widget({
      size: 1,
      bogus: 1,
      free: { anything: 1 },
      labels: { a: 'b' },
      items: [{ name: 'x', extra: true }],
      template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', junk: 1 }, whatever: 1 },
    });
    (obj.metadata as JsonMap).junk = 'x';
    obj.extraTop = 1;
    const paths = [
      'metadata.junk',
      'spec.bogus',
      'spec.items[0].extra',
      'spec.template.metadata.junk',
      'extraTop',
    ];
    t.same(compiled.unknownFields(obj).sort(), [...paths].sort());
    const copy = cloneJson(obj);
    t.same(compiled.prune(copy).sort(), [...paths].sort());
    t.same(compiled.unknownFields(copy), [], 'nothing unknown after pruning');
    t.equal((copy.spec as JsonMap).free !== undefined, true, 'preserved subtrees stay');
    t.same(
      ((copy.spec as JsonMap).template as JsonMap).whatever,
      1,
      'embedded resources may preserve unknown fields',
    );
    t.equal(
      strictDecodingMessage('Widget', 'v1', ['spec.bogus', 'spec.x']),
      'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.bogus", unknown field "spec.x"',
    );
    t.same(unknownFieldWarnings(['spec.bogus']), ['unknown field "spec.bogus"']);
  },
);

t.test('defaults apply to absent fields and inside defaulted objects; bad nulls go', async (t) => {
  const obj = widget({
    size: 1,
    items: [{ name: 'a' }, { name: 'b', weight: 5 }],
    note: null,
    name: null,
  });
  compiled.applyDefaults(obj);
  const spec = obj.spec as JsonMap;
  t.equal(spec.color, 'red');
  t.same(spec.items, [
    { name: 'a', weight: 1 },
    { name: 'b', weight: 5 },
  ]);
  t.same(spec.settings, { retries: 3 }, 'a defaulted object gets its own defaults');
  t.equal(spec.note, null, 'a nullable null stays');
  t.notOk('name' in spec, 'a non-nullable null without default is removed');
  const again = cloneJson(obj);
  compiled.applyDefaults(again);
  t.same(again, obj, 'defaulting is idempotent');
  const withNullDefaulted = widget({ size: 1, color: null });
  compiled.applyDefaults(withNullDefaulted);
  t.equal(
    (withNullDefaulted.spec as JsonMap).color,
    'red',
    'a non-nullable null takes the default',
  );
});

t.test('merge metadata for server-side apply', async (t) => {
  const spec = compiled.mergeSchema.fields?.spec;
  t.equal(spec?.type, 'map');
  if (spec?.type !== 'map') return;
  t.same(spec.fields?.items, {
    type: 'list',
    strategy: 'merge',
    mergeKey: 'name',
    mapKeys: ['name'],
    items: { type: 'map', fields: { name: { type: 'scalar' }, weight: { type: 'scalar' } } },
  });
  t.same(spec.fields?.tags, { type: 'list', strategy: 'merge' });
  t.equal(spec.fields?.parts?.type === 'list' && spec.fields.parts.strategy, 'atomic');
  t.equal(spec.fields?.strategy?.type === 'map' && spec.fields.strategy.atomic, true);
});

t.test('non-structural schemas are refused with causes', async (t) => {
  const bad = {
    type: 'object',
    properties: {
      spec: {
        properties: {
          a: { type: 'array' },
          b: { type: 'strange' },
          c: { $ref: '#/x', type: 'object' },
        },
        additionalProperties: { type: 'string' },
      },
      list: {
        type: 'array',
        items: { type: 'string' },
        uniqueItems: true,
        'x-kubernetes-list-type': 'map',
      },
    },
  };
  const errs = structuralSchemaErrors(bad).map(fieldErrorString);
  t.same(errs, [
    'openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields',
    'openAPIV3Schema.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive',
    'openAPIV3Schema.properties[spec].properties[a].items: Required value: must be specified',
    'openAPIV3Schema.properties[spec].properties[b].type: Unsupported value: "strange": supported values: "array", "boolean", "integer", "number", "object", "string"',
    'openAPIV3Schema.properties[spec].properties[c].$ref: Forbidden: $ref is not supported',
    'openAPIV3Schema.properties[list].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic',
    'openAPIV3Schema.properties[list].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map',
  ]);
  const refused = t.throws(() => compileCrdSchema(bad));
  t.ok(
    refused instanceof KubeLibError && refused.causes.length === errs.length,
    'compile refuses it, one cause each',
  );
  const e = t.throws(() =>
    compileCrdSchema({ type: 'object', properties: { a: { type: 'string', pattern: '(' } } }),
  );
  t.ok(e instanceof KubeLibError && e.httpCode === 422, 'an invalid regular expression is refused');
  t.same(structuralSchemaErrors({ type: 'string' }).map(fieldErrorString), [
    'openAPIV3Schema.type: Invalid value: "string": must be object at the root',
  ]);
});

t.test('formats Kubernetes checks', async (t) => {
  const formats: [string, string[], string[]][] = [
    ['date', ['2024-02-29'], ['2023-02-29', '2024-13-01', 'x']],
    [
      'date-time',
      ['2024-05-01T10:00:00Z', '2024-05-01T10:00:00.5+02:00'],
      ['2024-05-01', '2024-05-01T25:00:00Z'],
    ],
    ['ipv4', ['10.0.0.1'], ['10.0.0.256', '::1']],
    ['ipv6', ['::1', 'fe80::1'], ['10.0.0.1']],
    ['cidr', ['10.0.0.0/8', 'fd00::/64'], ['10.0.0.0', '10.0.0.0/33']],
    ['uuid', ['123e4567-e89b-12d3-a456-426614174000'], ['123']],
    ['byte', ['aGVsbG8='], ['not base64!']],
    ['hostname', ['example.com', 'a-b.c'], ['-bad.com', 'a_b']],
    ['mac', ['00:1a:2b:3c:4d:5e'], ['00:1a:2b']],
    ['duration', ['1h2m3s', '22 ns', '0'], ['forever']],
    ['email', ['a@b.c', 'Ann <a@b.c>'], ['nope']],
    ['uri', ['https://x.io/a', '/path'], ['no spaces allowed', 'relative']],
    ['hexcolor', ['#fff', 'A0B1C2'], ['#ggg']],
    ['unknownformat', ['anything'], []],
  ];
  for (const [format, good, bad] of formats) {
    const c = compileCrdSchema({ type: 'object', properties: { v: { type: 'string', format } } });
    for (const v of good) t.same(c.validate({ v }), [], `${format} accepts ${v}`);
    for (const v of bad) t.equal(c.validate({ v }).length, 1, `${format} refuses ${v}`);
  }
});

t.test(
  'property: pruning leaves exactly the known fields and validation never throws',
  async (t) => {
    const value = fc.oneof(
      fc.integer(),
      fc.string({ maxLength: 3 }),
      fc.boolean(),
      fc.constant(null),
    );
    const spec = fc.dictionary(
      fc.constantFrom('size', 'color', 'bogus', 'labels', 'items', 'free', 'x'),
      fc.oneof(
        value,
        fc.array(value, { maxLength: 3 }),
        fc.dictionary(fc.constantFrom('a', 'name', 'weight'), value),
      ),
    );
    fc.assert(
      fc.property(spec, (s) => {
        const obj = widget(s as JsonMap);
        compiled.validate(obj);
        const unknown = compiled.unknownFields(obj);
        const copy = cloneJson(obj);
        const pruned = compiled.prune(copy);
        t.same(pruned, unknown);
        t.same(compiled.unknownFields(copy), []);
        return true;
      }),
      { numRuns: 300 },
    );
  },
);
