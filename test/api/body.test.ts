/** Reading bodies: the byte bound, early refusal by Content-Length, a client gone mid-body. */
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import t from 'tap';
import {
  jsonNestsDeeperThan,
  MAX_JSON_DEPTH,
  parseJson,
  rawBodyLimit,
  readBody,
} from '../../src/api/body.js';
import { isEtceteraError } from '../../src/errors.js';

function fakeRequest(headers: Record<string, string> = {}): PassThrough & IncomingMessage {
  const s = new PassThrough() as PassThrough & IncomingMessage;
  (s as { headers: Record<string, string> }).headers = headers;
  return s;
}

t.test('a body within the bound is read whole', async (t) => {
  const req = fakeRequest();
  const p = readBody(req, 10);
  req.write('{"a":');
  req.end('1}');
  t.equal((await p).toString(), '{"a":1}');
});

t.test('past the bound: request is too large, before the end', async (t) => {
  const req = fakeRequest();
  const p = readBody(req, 4);
  req.write('12345');
  t.ok(isEtceteraError(await p.catch((e: unknown) => e), 'ERR_REQUEST_TOO_LARGE'));
  const declared = readBody(fakeRequest({ 'content-length': '5' }), 4);
  t.ok(
    isEtceteraError(await declared.catch((e: unknown) => e), 'ERR_REQUEST_TOO_LARGE'),
    'by Content-Length alone',
  );
});

t.test('a client gone before the end settles the read', async (t) => {
  const req = fakeRequest();
  const p = readBody(req, 100);
  req.write('{"key":');
  req.destroy();
  t.match(await p.catch((e: unknown) => e), { message: 'request closed before its body ended' });
});

t.test('JSON: empty and null read as {}, anything else as parsed', async (t) => {
  t.same(parseJson(Buffer.from('  ')), {});
  t.same(parseJson(Buffer.from('null')), {});
  t.same(parseJson(Buffer.from('[1]')), [1]);
  t.ok(
    isEtceteraError(
      (() => {
        try {
          return parseJson(Buffer.from('{'));
        } catch (e) {
          return e;
        }
      })(),
      'ERR_MALFORMED_JSON',
    ),
  );
});

t.test('the raw bound leaves room for base64 and framing', async (t) => {
  t.equal(rawBodyLimit(3 * 1024), 4 * 1024 + 512 * 1024);
});

t.test('the JSON depth measure is the depth of the parsed value', async (t) => {
  const depthOf = (v: unknown): number =>
    v !== null && typeof v === 'object'
      ? 1 + Math.max(0, ...Object.values(v as Record<string, unknown>).map(depthOf))
      : 0;
  // Strings full of brackets, quotes and backslashes must not count.
  const tricky = fc.stringMatching(/^[[\]{}"\\a]*$/);
  const value = fc.letrec((tie) => ({
    v: fc.oneof(
      { depthSize: 'medium' },
      fc.oneof(fc.string(), tricky, fc.integer(), fc.boolean(), fc.constant(null)),
      fc.array(tie('v'), { maxLength: 3 }),
      fc.dictionary(fc.oneof(fc.string(), tricky), tie('v'), { maxKeys: 3 }),
    ),
  })).v;
  fc.assert(
    fc.property(value, fc.nat({ max: 12 }), fc.boolean(), (v, limit, spaced) => {
      const text = JSON.stringify(v, null, spaced ? 2 : undefined);
      t.equal(jsonNestsDeeperThan(text, limit), depthOf(v) > limit);
    }),
    { numRuns: 500 },
  );
  t.ok(jsonNestsDeeperThan('['.repeat(500_000), MAX_JSON_DEPTH), 'half a megabyte of [');
  t.notOk(jsonNestsDeeperThan(`["${'['.repeat(20)}"]`, 2), 'brackets in a string');
  t.notOk(jsonNestsDeeperThan(`["\\"${'['.repeat(20)}"]`, 2), 'after an escaped quote');
});
