/**
 * The auth store's rules (src/store/auth.ts): etcd 3.4's answers for users, roles and the
 * enabled flag, and a property test of range permission checks against a model.
 */
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { isEtceteraError } from '../../src/errors.js';
import { AuthStore, covers, type PasswordHash } from '../../src/store/auth.js';

const b = (s: string) => new Uint8Array(Buffer.from(s, 'latin1'));
const NONE = new Uint8Array(0);
const pw: PasswordHash = { scheme: 'scrypt', salt: 'c2FsdA==', hash: 'aGFzaA==' };

function refuses(t: Test, fn: () => void, code: string, what: string): void {
  try {
    fn();
    t.fail(`${what}: expected ${code}`);
  } catch (e) {
    t.ok(isEtceteraError(e) && e.code === code, `${what}: ${code}`);
  }
}

t.test(
  'enable needs root with the root role; root management is guarded while enabled',
  async (t) => {
    const a = new AuthStore();
    t.equal(a.revision, 1);
    refuses(t, () => a.apply({ type: 'enable' }), 'ERR_ROOT_USER_NOT_EXIST', 'enable without root');
    a.apply({ type: 'userAdd', name: 'root', password: pw });
    refuses(t, () => a.apply({ type: 'enable' }), 'ERR_ROOT_ROLE_NOT_EXIST', 'root lacks role');
    a.apply({ type: 'userGrantRole', name: 'root', role: 'root' }); // before the role exists
    a.apply({ type: 'roleAdd', name: 'root' });
    const before = a.revision;
    a.apply({ type: 'enable' });
    t.ok(a.enabled);
    t.equal(a.revision, before, 'enable does not change the auth revision');
    refuses(
      t,
      () => a.apply({ type: 'userDelete', name: 'root' }),
      'ERR_INVALID_AUTH_MGMT',
      'del root',
    );
    refuses(
      t,
      () => a.apply({ type: 'roleDelete', name: 'root' }),
      'ERR_INVALID_AUTH_MGMT',
      'del role',
    );
    refuses(
      t,
      () => a.apply({ type: 'userRevokeRole', name: 'root', role: 'root' }),
      'ERR_INVALID_AUTH_MGMT',
      'revoke root from root',
    );
    refuses(
      t,
      () => a.apply({ type: 'userAdd', name: '', password: pw }),
      'ERR_USER_EMPTY',
      'empty',
    );
    refuses(t, () => a.apply({ type: 'userAdd', name: 'root' }), 'ERR_USER_ALREADY_EXIST', 'dup');
    refuses(t, () => a.apply({ type: 'roleAdd', name: '' }), 'ERR_ROLE_EMPTY', 'empty role');
    refuses(
      t,
      () => a.apply({ type: 'userGrantRole', name: 'x', role: 'root' }),
      'ERR_USER_NOT_FOUND',
      'no user',
    );
    refuses(
      t,
      () => a.apply({ type: 'userGrantRole', name: 'root', role: 'x' }),
      'ERR_ROLE_NOT_FOUND',
      'no role',
    );
    refuses(
      t,
      () => a.apply({ type: 'roleRevokePermission', name: 'root', key: b('k'), rangeEnd: NONE }),
      'ERR_PERMISSION_NOT_GRANTED',
      'revoke a grant never made',
    );
    const rev = a.revision;
    a.apply({ type: 'userGrantRole', name: 'root', role: 'root' });
    t.equal(a.revision, rev, 'granting a role held already changes nothing');
    a.apply({ type: 'roleAdd', name: 'r' });
    t.equal(a.revision, rev + 1, 'a change adds one to the auth revision');
    a.apply({ type: 'disable' });
    a.apply({ type: 'userRevokeRole', name: 'root', role: 'root' });
    t.notOk(a.isRoot('root'), 'with auth disabled root may lose the role');
  },
);

t.test('the record round-trips and a bad record is refused', async (t) => {
  const a = new AuthStore();
  a.apply({ type: 'userAdd', name: 'alice', password: pw });
  a.apply({ type: 'roleAdd', name: 'r' });
  a.apply({
    type: 'roleGrantPermission',
    name: 'r',
    permission: { permType: 'READ', key: b('a'), rangeEnd: b('c') },
  });
  a.apply({ type: 'userGrantRole', name: 'alice', role: 'r' });
  const c = new AuthStore();
  c.load(a.encode());
  t.same(c.encode(), a.encode());
  t.ok(c.permitted('alice', 'READ', b('b'), NONE));
  t.notOk(c.permitted('alice', 'WRITE', b('b'), NONE));
  t.throws(() => c.load(b('{')), /auth record/);
  t.throws(() => c.load(b('{"enabled":1}')), /auth record/);
});

// --- the property: the sweep in `covers` against a model ---------------------------------

// Keys over a small alphabet, so grants overlap and touch often.
const key = fc.string({ unit: fc.constantFrom('a', 'b', 'c'), minLength: 0, maxLength: 3 });
// A grant or a request: a single key (''), a range, or from key on ('\0').
const span = fc.tuple(key, fc.oneof(fc.constant(''), fc.constant('\0'), key));

const after = (k: string) => `${k}\0`;
type Iv = [string, string | undefined];
function toIv([k, e]: [string, string]): Iv {
  if (e === '') return [k, after(k)];
  if (e === '\0') return [k, undefined];
  return [k, e];
}
const inIv = (p: string, [s, e]: Iv) => p >= s && (e === undefined || p < e);

/**
 * The model: [s, e) is covered iff it is not empty and every point where an uncovered stretch
 * could begin (s, and every grant's end inside [s, e)) lies in some grant. Latin1 strings
 * compare as their bytes do.
 */
function modelCovers(grants: Iv[], [s, e]: Iv): boolean {
  if (e !== undefined && e <= s) return false;
  const points = [s, ...grants.map((g) => g[1]).filter((x): x is string => x !== undefined)];
  const inside = points.filter((p) => p >= s && (e === undefined || p < e));
  if (e === undefined && !grants.some((g) => g[1] === undefined)) return false;
  return inside.every((p) => grants.some((g) => inIv(p, g)));
}

t.test('range permission checks agree with a model of granted intervals', async (t) => {
  fc.assert(
    fc.property(fc.array(span, { maxLength: 6 }), span, (gs, req) => {
      const grants = gs.map(toIv);
      const [s, e] = toIv(req);
      const got = covers(
        grants.map(([gs2, ge]) => [b(gs2), ge === undefined ? undefined : b(ge)] as const),
        b(s),
        e === undefined ? undefined : b(e),
      );
      return got === modelCovers(grants, [s, e]);
    }),
    { numRuns: 3000 },
  );
  t.pass('3000 cases agree');
});

t.test(
  'permitted follows READ, WRITE and READWRITE grants of every role of the user',
  async (t) => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(span, fc.constantFrom('READ', 'WRITE', 'READWRITE' as const)), {
          maxLength: 5,
        }),
        span,
        fc.constantFrom('READ', 'WRITE' as const),
        (grants, req, need) => {
          const a = new AuthStore();
          a.apply({ type: 'userAdd', name: 'u', password: pw });
          grants.forEach(([[k, e], type], i) => {
            a.apply({ type: 'roleAdd', name: `r${i}` });
            a.apply({
              type: 'roleGrantPermission',
              name: `r${i}`,
              permission: { permType: type, key: b(k), rangeEnd: b(e) },
            });
            a.apply({ type: 'userGrantRole', name: 'u', role: `r${i}` });
          });
          const usable = grants
            .filter(([, type]) => type === 'READWRITE' || type === need)
            .map(([g]) => toIv(g));
          const got = a.permitted('u', need, b(req[0]), b(req[1]));
          return got === modelCovers(usable, toIv(req));
        },
      ),
      { numRuns: 1000 },
    );
    t.pass('1000 cases agree');
  },
);

t.test(
  'an Authenticate entry tells the token table, changes no state, and checks the revision',
  async (t) => {
    const a = new AuthStore();
    const told: unknown[] = [];
    a.onAuthenticated = (x) => told.push(x);
    const at = (checkedRevision: number) => ({
      type: 'authenticate' as const,
      name: 'alice',
      token: 'tok.1',
      checkedRevision,
    });
    refuses(t, () => a.apply(at(1)), 'ERR_AUTH_NOT_ENABLED', 'auth disabled');
    a.apply({ type: 'userAdd', name: 'root', password: pw });
    a.apply({ type: 'userGrantRole', name: 'root', role: 'root' });
    a.apply({ type: 'userAdd', name: 'alice', password: pw });
    a.apply({ type: 'enable' });
    const before = Buffer.from(a.encode()).toString();
    const rev = a.revision;
    refuses(t, () => a.apply(at(rev - 1)), 'ERR_AUTH_OLD_REVISION', 'checked before a change');
    refuses(t, () => a.apply({ ...at(rev), name: 'bob' }), 'ERR_AUTH_FAILED', 'no such user');
    t.same(told, [], 'a refused entry teaches no token');
    a.apply(at(rev));
    t.same(
      told,
      [{ user: 'alice', token: 'tok.1', stamp: pw.hash }],
      'the token, tied to the hash',
    );
    t.equal(Buffer.from(a.encode()).toString(), before, 'no state changed');
    t.equal(a.revision, rev, 'nor the auth revision');
  },
);
