import fc from 'fast-check';
import t from 'tap';
import { GENERIC_INVALID_MESSAGE, KubeLibError } from '../../../src/k8s/errors.js';
import { cloneJson, type JsonValue, jsonEqual } from '../../../src/k8s/json.js';
import {
  applyJsonPatch,
  applyMergePatch,
  MAX_JSON_PATCH_OPERATIONS,
  mergePatchObject,
} from '../../../src/k8s/patch.js';

function libError(fn: () => unknown): KubeLibError {
  try {
    fn();
  } catch (e) {
    if (e instanceof KubeLibError) return e;
    throw e;
  }
  throw new Error('expected a KubeLibError');
}

t.test('merge patch: RFC 7386 appendix A examples', async (t) => {
  const cases: [JsonValue, JsonValue, JsonValue][] = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  for (const [target, patch, result] of cases) {
    t.same(applyMergePatch(target, patch), result, JSON.stringify(patch));
  }
});

t.test('merge patch does not mutate or alias its inputs', async (t) => {
  const target = { a: { b: [1, 2] }, keep: { deep: { x: 1 } } };
  const patch = { a: { c: { d: 1 } } };
  const before = cloneJson(target);
  const patchBefore = cloneJson(patch);
  const out = applyMergePatch(target, patch) as {
    keep: { deep: { x: number } };
    a: { c: { d: number } };
  };
  t.same(target, before);
  t.same(patch, patchBefore);
  out.keep.deep.x = 99;
  out.a.c.d = 99;
  t.equal(target.keep.deep.x, 1, 'untouched parts are copies');
  t.equal(patch.a.c.d, 1, 'patched parts are copies');
});

t.test('merge patch bodies as kube-apiserver takes them', async (t) => {
  t.same(
    mergePatchObject(
      { metadata: { labels: { a: '1' } } },
      { metadata: { labels: { tier: 'fe' } } },
    ),
    {
      metadata: { labels: { a: '1', tier: 'fe' } },
    },
  );
  const nullBody = libError(() => mergePatchObject({}, null));
  t.equal(nullBody.httpCode, 400);
  t.equal(nullBody.statusMessage, 'Invalid JSON Patch');
  const arrayBody = libError(() => mergePatchObject({}, [1]));
  t.equal(arrayBody.httpCode, 422);
});

t.test('property: merge patch is idempotent and agrees with a second application', async (t) => {
  const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(json, json, (target, patch) => {
          const once = applyMergePatch(target, patch);
          const twice = applyMergePatch(once, patch);
          return jsonEqual(once, twice);
        }),
        { numRuns: 500 },
      ),
    'idempotent',
  );
});

t.test('JSON patch: operations and test', async (t) => {
  const pod = {
    metadata: { name: 'p', labels: { a: '1' } },
    spec: { containers: [{ name: 'c', image: 'i:1' }] },
  };
  const out = applyJsonPatch(pod, [
    { op: 'test', path: '/metadata/name', value: 'p' },
    { op: 'replace', path: '/spec/containers/0/image', value: 'i:2' },
    { op: 'add', path: '/spec/containers/-', value: { name: 'd', image: 'j' } },
    { op: 'remove', path: '/metadata/labels/a' },
    { op: 'add', path: '/metadata/labels/b~1c', value: '2' },
    { op: 'copy', from: '/metadata/name', path: '/metadata/generateName' },
    { op: 'move', from: '/metadata/generateName', path: '/metadata/annotations' },
  ]);
  t.same(out, {
    metadata: { name: 'p', labels: { 'b/c': '2' }, annotations: 'p' },
    spec: {
      containers: [
        { name: 'c', image: 'i:2' },
        { name: 'd', image: 'j' },
      ],
    },
  });
  t.equal(pod.spec.containers[0]?.image, 'i:1', 'the target is untouched');
  t.same(
    applyJsonPatch(pod, null),
    pod,
    'a null body is no operation (Go decodes it as an empty patch)',
  );
});

t.test('JSON patch errors map to 400, 413 and 422 as Kubernetes does', async (t) => {
  const obj = { spec: { replicas: 1 }, list: [1] };
  const notList = libError(() => applyJsonPatch(obj, { op: 'add' }));
  t.equal(notList.httpCode, 400);
  t.equal(
    notList.statusMessage,
    'json: cannot unmarshal object into Go value of type jsonpatch.Patch',
  );
  const notOp = libError(() => applyJsonPatch(obj, ['x']));
  t.equal(
    notOp.statusMessage,
    'json: cannot unmarshal string into Go value of type jsonpatch.Operation',
  );
  const tooMany = libError(() =>
    applyJsonPatch(
      obj,
      Array.from({ length: MAX_JSON_PATCH_OPERATIONS + 1 }, () => ({ op: 'test', path: '' })),
    ),
  );
  t.equal(tooMany.httpCode, 413);
  t.equal(tooMany.reason, 'RequestEntityTooLarge');
  t.equal(
    tooMany.statusMessage,
    'The allowed maximum operations in a JSON patch is 10000, got 10001',
  );
  const failures: unknown[] = [
    [{ op: 'test', path: '/spec/replicas', value: 2 }],
    [{ op: 'replace', path: '/spec/missing', value: 1 }],
    [{ op: 'remove', path: '/nope' }],
    [{ op: 'add', path: '/a/b/c', value: 1 }],
    [{ op: 'add', path: '/list/5', value: 1 }],
    [{ op: 'frob', path: '/spec' }],
    [{ op: '_get', path: '/spec' }],
    [{ op: 'add', path: '/__proto__/polluted', value: 1 }],
    [{ op: 'move', from: '/nope', path: '/x' }],
  ];
  for (const ops of failures) {
    const e = libError(() => applyJsonPatch(obj, ops));
    t.equal(e.httpCode, 422, JSON.stringify(ops));
    t.equal(e.statusMessage, GENERIC_INVALID_MESSAGE);
    t.ok(e.message.length > GENERIC_INVALID_MESSAGE.length, 'the error keeps the precise reason');
  }
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype pollution');
  t.same(obj, { spec: { replicas: 1 }, list: [1] }, 'a failed patch changes nothing');
});

t.test(
  'property: a JSON patch of replace ops equals the merge patch of the same values',
  async (t) => {
    const keys = fc.constantFrom('a', 'b', 'c');
    t.doesNotThrow(
      () =>
        fc.assert(
          fc.property(
            fc.dictionary(keys, fc.integer()),
            fc.dictionary(keys, fc.integer()),
            (target, changes) => {
              const ops = Object.entries(changes).map(([k, v]) => ({
                op: 'add',
                path: `/${k}`,
                value: v,
              }));
              return jsonEqual(applyJsonPatch(target, ops), applyMergePatch(target, changes));
            },
          ),
          { numRuns: 300 },
        ),
      'agree',
    );
  },
);
