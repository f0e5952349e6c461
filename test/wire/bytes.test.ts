/**
 * The byte helpers every face and the client share (src/wire/bytes.ts): the two string forms
 * of keys round-trip, latin1 keeps byte order, base64 round-trips, and prefixEnd is the range
 * end etcd uses for a prefix, "\0" (every key from here on) where there is none.
 */
import fc from 'fast-check';
import t from 'tap';
import {
  bytesToLatin1,
  bytesToUtf8,
  fromBase64,
  latin1ToBytes,
  prefixEnd,
  toBase64,
  utf8ToBytes,
} from '../../src/wire/bytes.js';

const bytes = fc.uint8Array({ maxLength: 24 });
/** Keys rich in 0xff runs and zeros, where prefix ends are subtle. */
const edgyBytes = fc
  .array(fc.oneof(fc.constant(0xff), fc.constant(0), fc.integer({ min: 0, max: 255 })), {
    maxLength: 12,
  })
  .map((a) => Uint8Array.from(a));
const cmp = (a: Uint8Array, b: Uint8Array) => Buffer.compare(a, b);
const startsWith = (k: Uint8Array, p: Uint8Array) =>
  k.length >= p.length && cmp(k.subarray(0, p.length), p) === 0;

t.test('latin1 form: exact for any bytes, and string order is byte order', async (t) => {
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(bytes, bytes, (a, b) => {
        const sa = bytesToLatin1(a);
        if (sa.length !== a.length) throw new Error('one char per byte');
        if (cmp(latin1ToBytes(sa), a) !== 0) throw new Error(`round trip of ${a}`);
        const sb = bytesToLatin1(b);
        const order = sa < sb ? -1 : sa > sb ? 1 : 0;
        if (order !== Math.sign(cmp(a, b))) throw new Error(`order of ${a} and ${b}`);
      }),
    ),
  );
  t.equal(bytesToLatin1(Uint8Array.of(0xe2, 0x82, 0xac)), '\u00e2\u0082\u00ac', 'not UTF-8');
});

t.test('UTF-8 form: text round-trips, and is not the latin1 form', async (t) => {
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 20 }), (s) => {
        if (bytesToUtf8(utf8ToBytes(s)) !== s) throw new Error(`round trip of ${s}`);
        if (cmp(utf8ToBytes(s), Buffer.from(s, 'utf8')) !== 0) throw new Error('UTF-8 bytes');
      }),
    ),
  );
  t.same([...utf8ToBytes('€')], [0xe2, 0x82, 0xac]);
  t.same([...latin1ToBytes('é')], [0xe9], 'latin1 of a char below 256 is one byte');
  t.same([...utf8ToBytes('é')], [0xc3, 0xa9], 'its UTF-8 is two');
});

t.test('base64 round-trips; absent or empty is no bytes', async (t) => {
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(bytes, (b) => {
        const s = toBase64(b);
        if (s !== Buffer.from(b).toString('base64')) throw new Error('standard base64');
        if (cmp(fromBase64(s), b) !== 0) throw new Error(`round trip of ${b}`);
      }),
    ),
  );
  t.equal(fromBase64(undefined).length, 0);
  t.equal(fromBase64('').length, 0);
  t.equal(toBase64(new Uint8Array(Buffer.from('xhello').subarray(1))), 'aGVsbG8=', 'a view');
});

t.test('prefixEnd is the end of exactly the keys with the prefix', async (t) => {
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(edgyBytes, edgyBytes, fc.boolean(), (bytes, key, asBuffer) => {
        // a Buffer too: its slice is a view, so a copy made with slice would change it.
        const prefix = asBuffer ? Buffer.from(bytes) : bytes;
        const before = Uint8Array.from(prefix);
        const end = prefixEnd(prefix);
        if (cmp(prefix, before) !== 0) throw new Error('the prefix was changed');
        const open = end.length === 1 && end[0] === 0;
        if (prefix.every((b) => b === 0xff)) {
          // empty or all 0xff: no end exists, "\0" means every key >= prefix.
          if (!open) throw new Error(`${prefix} should give [0], gave ${end}`);
          return;
        }
        if (open) throw new Error(`${prefix} has an end, gave [0]`);
        const inRange = cmp(prefix, key) <= 0 && cmp(key, end) < 0;
        if (inRange !== startsWith(key, prefix)) {
          throw new Error(`${key} against prefix ${prefix}, end ${end}`);
        }
      }),
      { numRuns: 2000 },
    ),
  );
  t.same([...prefixEnd(new Uint8Array(0))], [0], 'the empty key: "\\0", as --from-key sends');
  t.same([...prefixEnd(Uint8Array.of(0xff, 0xff))], [0], 'all 0xff: "\\0"');
  t.same([...prefixEnd(Uint8Array.of(0x61, 0xff, 0xff))], [0x62], 'trailing 0xff dropped');
  t.same([...prefixEnd(utf8ToBytes('/registry/'))], [...utf8ToBytes('/registry0')]);
});
