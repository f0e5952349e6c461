/**
 * --auth-token: the flag's forms, simple tokens (random, expiring after the TTL unused, ended
 * by a password change) and JWTs (RS256 and ES256 keys from PEM files; a token signed by
 * another key, or altered, is refused).
 */
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { JwtTokens, parseAuthTokenSpec, SimpleTokens } from '../../src/server/auth-token.js';

t.test('the flag', async (t) => {
  t.same(parseAuthTokenSpec('simple'), { kind: 'simple' });
  t.match(parseAuthTokenSpec('jwt,pub-key=p,priv-key=k,sign-method=RS256'), {
    kind: 'jwt',
    signMethod: 'RS256',
    pubKeyFile: 'p',
    privKeyFile: 'k',
    ttlMs: 300_000,
  });
  t.match(parseAuthTokenSpec('jwt,pub-key=p,sign-method=ES256,ttl=10m'), { ttlMs: 600_000 });
  t.throws(() => parseAuthTokenSpec('bogus'), /--auth-token must be simple or jwt/);
  t.throws(() => parseAuthTokenSpec('jwt,pub-key=p'), /needs sign-method/);
  t.throws(() => parseAuthTokenSpec('jwt,sign-method=RS256'), /needs pub-key/);
  t.throws(() => parseAuthTokenSpec('jwt,pub-key=p,sign-method=RS256,color=red'), /unknown option/);
});

t.test('simple tokens expire unused and end with the password', async (t) => {
  let now = 1000;
  const tokens = new SimpleTokens(300_000, () => now);
  t.teardown(() => tokens.close());
  const stamp = (u: string) => (u === 'alice' ? 'h1' : undefined);
  const a = tokens.mint();
  const b = tokens.mint();
  t.match(a, /^[A-Za-z]{16}\.\d+$/, "etcd's shape");
  t.not(a, b, 'each token is new');
  t.equal(await tokens.info(a, 5, stamp), undefined, 'a minted token is unknown until learnt');
  tokens.learn({ user: 'alice', token: a, stamp: 'h1' });
  tokens.learn({ user: 'alice', token: b, stamp: 'h1' });
  t.same(await tokens.info(a, 5, stamp), { user: 'alice', revision: 5 });
  now += 299_000;
  t.ok(await tokens.info(a, 5, stamp), 'a use renews it');
  now += 299_000;
  t.ok(await tokens.info(a, 5, stamp), 'still alive 299 s after its last use');
  t.equal(await tokens.info(b, 5, stamp), undefined, 'the unused one expired');
  t.equal(await tokens.info(a, 5, () => 'h2'), undefined, 'a new password ends it');
  t.equal(await tokens.info('nope.1', 5, stamp), undefined);
});

t.test('JWT tokens with RS256 and ES256 keys', async (t) => {
  const dir = t.testdir();
  for (const [alg, kind, opts] of [
    ['RS256', 'rsa', { modulusLength: 2048 }],
    ['ES256', 'ec', { namedCurve: 'P-256' }],
  ] as const) {
    const pair = () => {
      const k = generateKeyPairSync(kind as 'rsa', opts as { modulusLength: number });
      return {
        pub: k.publicKey.export({ type: 'spki', format: 'pem' }) as string,
        priv: k.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
      };
    };
    const mine = pair();
    const other = pair();
    const file = (name: string, text: string) => {
      const p = join(dir, `${alg}-${name}`);
      writeFileSync(p, text);
      return p;
    };
    const spec = (pub: string, priv?: string) =>
      parseAuthTokenSpec(
        `jwt,pub-key=${pub}${priv === undefined ? '' : `,priv-key=${priv}`},sign-method=${alg}`,
      ) as Extract<ReturnType<typeof parseAuthTokenSpec>, { kind: 'jwt' }>;
    const signer = await JwtTokens.open(spec(file('pub', mine.pub), file('priv', mine.priv)));
    const verifier = await JwtTokens.open(spec(file('pub2', mine.pub)));
    const stranger = await JwtTokens.open(spec(file('opub', other.pub), file('opriv', other.priv)));
    const token = await signer.assign('alice', 7);
    t.same(
      await verifier.info(token),
      { user: 'alice', revision: 7 },
      `${alg}: verified with the public key alone`,
    );
    t.equal(
      await verifier.info(await stranger.assign('alice', 7)),
      undefined,
      `${alg}: another key's token is refused`,
    );
    const [h, , s] = token.split('.');
    const forged = Buffer.from(
      JSON.stringify({ username: 'root', revision: 7, exp: 4e9 }),
    ).toString('base64url');
    t.equal(
      await verifier.info(`${h}.${forged}.${s}`),
      undefined,
      `${alg}: an altered token is refused`,
    );
    await t.rejects(verifier.assign('alice', 1), /priv-key/, `${alg}: no priv-key, no tokens`);
  }
  await t.rejects(
    JwtTokens.open({
      kind: 'jwt',
      signMethod: 'RS256',
      pubKeyFile: join(dir, 'missing'),
      ttlMs: 1000,
    }),
    /cannot read pub-key/,
  );
  writeFileSync(join(dir, 'garbage'), 'not a key');
  await t.rejects(
    JwtTokens.open({
      kind: 'jwt',
      signMethod: 'RS256',
      pubKeyFile: join(dir, 'garbage'),
      ttlMs: 1000,
    }),
    /key does not load/,
  );
});
