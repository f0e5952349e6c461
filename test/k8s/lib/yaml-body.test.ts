import fc from 'fast-check';
import t from 'tap';
import { isKubeLibError, KubeLibError } from '../../../src/k8s/errors.js';
import type { JsonValue } from '../../../src/k8s/json.js';
import { parseApplyBody } from '../../../src/k8s/yaml-body.js';

function message(body: string): string {
  try {
    parseApplyBody(body);
  } catch (e) {
    if (e instanceof KubeLibError && e.httpCode === 400) return e.statusMessage;
    throw e;
  }
  throw new Error('expected a failure');
}

t.test('JSON bodies (what kubectl sends) and YAML bodies', async (t) => {
  const json = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1"}}';
  t.same(parseApplyBody(json), JSON.parse(json));
  t.same(parseApplyBody(Buffer.from(json)), JSON.parse(json), 'bytes too');
  t.same(
    parseApplyBody(
      'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web # comment\nspec:\n  replicas: 3\n  paused: false\n  x: ~\n',
    ),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: { replicas: 3, paused: false, x: null },
    },
  );
  t.same(
    parseApplyBody('{a: 1, b: [x, y]}'),
    { a: 1, b: ['x', 'y'] },
    'flow YAML that is not JSON',
  );
  t.same(parseApplyBody('kind: A\n---\n'), { kind: 'A' }, 'a trailing document marker is fine');
  t.same(parseApplyBody('---\nkind: A\n'), { kind: 'A' }, 'a leading one too');
  t.same(parseApplyBody('base: &b {x: 1}\nm:\n  <<: *b\n  y: 2\n'), {
    base: { x: 1 },
    m: { x: 1, y: 2 },
  });
  t.same(
    parseApplyBody('v: "010"\nw: 010\nd: 2024-01-01\n'),
    { v: '010', w: 10, d: '2024-01-01' },
    'YAML 1.2 core',
  );
});

t.test('malformed bodies are 400 with Kubernetes-style messages', async (t) => {
  t.equal(
    message('[1, 2]'),
    'error decoding YAML: json: cannot unmarshal array into Go value of type map[string]interface {}',
  );
  t.equal(
    message('"text"'),
    'error decoding YAML: json: cannot unmarshal string into Go value of type map[string]interface {}',
  );
  t.match(
    message('a: 1\na: 2\n'),
    /^error decoding YAML: error converting YAML to JSON: yaml: line 2: Map keys must be unique/,
  );
  t.match(message('a: [1,\n'), /^error decoding YAML: error converting YAML to JSON: yaml: /);
  t.match(
    message('a: 1\n---\nb: 2\n'),
    /^error decoding YAML: an apply body must hold one YAML document, found 2$/,
  );
  t.match(message(''), /^error decoding YAML: /);
  t.match(message('   \n'), /^error decoding YAML: /);
  t.match(message('{"a": '), /^error decoding YAML: /, 'broken JSON');
  const bomb = [
    'a: &a ["x","x","x","x","x","x","x","x","x","x"]',
    'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]',
    'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]',
    'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]',
    'e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]',
    'f: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]',
  ].join('\n');
  t.match(message(bomb), /^error decoding YAML: /, 'alias expansion is bounded');
});

t.test('property: any JSON object round-trips; any text parses or fails with a 400', async (t) => {
  fc.assert(
    fc.property(fc.dictionary(fc.string(), fc.jsonValue() as fc.Arbitrary<JsonValue>), (obj) => {
      const clean = JSON.parse(JSON.stringify(obj));
      t.same(parseApplyBody(JSON.stringify(clean)), clean);
      return true;
    }),
    { numRuns: 200 },
  );
  fc.assert(
    fc.property(fc.string({ maxLength: 60 }), (s) => {
      try {
        parseApplyBody(s);
        return true;
      } catch (e) {
        return isKubeLibError(e, 'BadRequest');
      }
    }),
    { numRuns: 1000 },
  );
});
