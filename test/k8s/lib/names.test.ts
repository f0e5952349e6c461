import fc from 'fast-check';
import t from 'tap';
import { fieldErrorString, goValue } from '../../../src/k8s/field-errors.js';
import {
  generateNameFrom,
  MAX_GENERATED_BASE_LENGTH,
  NAME_SUFFIX_ALPHABET,
  nameIsDnsLabel,
  nameIsDnsSubdomain,
  validateDns1035Label,
  validateDns1123Label,
  validateDns1123Subdomain,
  validateObjectMeta,
  validatePathSegmentName,
  validateQualifiedName,
} from '../../../src/k8s/names.js';

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

t.test('DNS-1123 subdomain', async (t) => {
  for (const ok of [
    'a',
    'web-1',
    'a.b.c',
    '0',
    'x'.repeat(253).replace(/x{64}/g, (m) => `${m.slice(0, 63)}.`),
  ]) {
    t.same(validateDns1123Subdomain(ok), [], ok.slice(0, 20));
  }
  t.same(validateDns1123Subdomain('Bad_Name'), [SUBDOMAIN_MSG]);
  t.same(validateDns1123Subdomain('-a'), [SUBDOMAIN_MSG]);
  t.same(validateDns1123Subdomain('a.'), [SUBDOMAIN_MSG]);
  t.same(validateDns1123Subdomain(''), [SUBDOMAIN_MSG]);
  t.same(validateDns1123Subdomain('a'.repeat(254)), ['must be no more than 253 characters']);
});

t.test('DNS-1123 label and DNS-1035 label', async (t) => {
  t.same(validateDns1123Label('web-1'), []);
  t.same(validateDns1123Label('1web'), []);
  t.same(validateDns1123Label('a.b'), ['must not contain dots']);
  t.same(validateDns1123Label('A'), [LABEL_MSG]);
  t.same(validateDns1123Label('a'.repeat(64)), ['must be no more than 63 characters']);
  t.same(validateDns1035Label('web'), []);
  t.same(validateDns1035Label('1web'), [
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
  ]);
});

t.test('qualified names (label and annotation keys)', async (t) => {
  t.same(validateQualifiedName('app'), []);
  t.same(validateQualifiedName('example.com/App_1.x'), []);
  t.same(validateQualifiedName('/app'), ['prefix part must be non-empty']);
  t.same(validateQualifiedName('a/'), [
    'name part must be non-empty',
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
  ]);
  t.match(
    validateQualifiedName('a/b/c')[0],
    /^a qualified name must consist of .* with an optional DNS subdomain prefix and '\/' \(e\.g\. 'example\.com\/MyName'\)$/,
  );
});

t.test('path segment names', async (t) => {
  t.same(validatePathSegmentName('.'), ["may not be '.'"]);
  t.same(validatePathSegmentName('..'), ["may not be '..'"]);
  t.same(validatePathSegmentName('a/b%c'), ["may not contain '/'", "may not contain '%'"]);
  t.same(validatePathSegmentName('..', true), [], 'a prefix may be dots');
  t.same(validatePathSegmentName('ok'), []);
});

t.test(
  'generateName: a trailing dash is fine, the base is cut, the suffix is from the alphabet',
  async (t) => {
    t.same(nameIsDnsSubdomain('web-', true), [], 'prefix ends with a dash');
    t.not(nameIsDnsSubdomain('web-', false).length, 0, 'a name may not');
    t.same(nameIsDnsLabel('a-', true), []);
    const name = generateNameFrom('web-', () => 0);
    t.equal(name, 'web-bbbbb');
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (base) => {
        const n = generateNameFrom(base);
        const suffix = n.slice(-5);
        return (
          n.length === Math.min(base.length, MAX_GENERATED_BASE_LENGTH) + 5 &&
          [...suffix].every((c) => NAME_SUFFIX_ALPHABET.includes(c))
        );
      }),
    );
    t.equal(generateNameFrom('x'.repeat(70)).length, 63);
  },
);

t.test('ObjectMeta validation reports Kubernetes causes', async (t) => {
  const rules = { namespaced: true, name: nameIsDnsSubdomain };
  t.same(
    validateObjectMeta({ name: 'web', namespace: 'default', labels: { app: 'web' } }, rules),
    [],
  );
  const errs = validateObjectMeta(
    {
      name: 'Bad_Name',
      namespace: 'Default',
      labels: { 'bad key': 'ok', app: '-x' },
      annotations: { 'example.com/ok': 'x' },
      generation: -1,
      finalizers: ['orphan', 'foregroundDeletion'],
    },
    rules,
  ).map(fieldErrorString);
  t.equal(errs[0], `metadata.name: Invalid value: "Bad_Name": ${SUBDOMAIN_MSG}`);
  t.equal(errs[1], `metadata.namespace: Invalid value: "Default": ${LABEL_MSG}`);
  t.equal(errs[2], 'metadata.generation: Invalid value: -1: must be greater than or equal to 0');
  t.match(errs[3], /^metadata\.labels: Invalid value: "bad key": name part must consist of/);
  t.match(errs[4], /^metadata\.labels: Invalid value: "-x": a valid label must be/);
  t.equal(
    errs[5],
    'metadata.finalizers: Invalid value: []string{"orphan", "foregroundDeletion"}: finalizer orphan and foregroundDeletion cannot be both set',
  );
  t.same(validateObjectMeta({ generateName: 'web-' }, rules).map(fieldErrorString), [
    'metadata.name: Required value: name or generateName is required',
    'metadata.namespace: Required value',
  ]);
  t.same(
    validateObjectMeta(
      { name: 'n1', namespace: 'x' },
      { namespaced: false, name: nameIsDnsSubdomain },
    ).map(fieldErrorString),
    ['metadata.namespace: Forbidden: not allowed on this type'],
  );
  const big = { a: 'x'.repeat(256 * 1024) };
  t.same(
    validateObjectMeta({ name: 'n', namespace: 'd', annotations: big }, rules).map(
      fieldErrorString,
    ),
    ['metadata.annotations: Too long: may not be more than 262144 bytes'],
  );
  t.same(
    validateObjectMeta(
      {
        name: 'n',
        namespace: 'd',
        ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p' }],
      },
      rules,
    ).map(fieldErrorString),
    ['metadata.ownerReferences.uid: Invalid value: "": uid must not be empty'],
  );
});

t.test('Go value formatting of field errors', async (t) => {
  t.equal(goValue('a"b\n\u0001'), '"a\\"b\\n\\x01"');
  t.equal(goValue(3), '3');
  t.equal(goValue(null), 'null');
  t.equal(goValue(['a', 1]), '[]interface {}{"a", 1}');
  t.equal(goValue({ b: 1, a: 'x' }), 'map[string]interface {}{"a":"x", "b":1}');
});
