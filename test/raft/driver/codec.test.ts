import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { decodeMessage, encodeMessage, MessageTag } from '../../../src/raft/driver/codec.js';
import { Reader, WireError, Writer } from '../../../src/raft/driver/wire.js';
import { messageArb } from './arbitraries.js';

/** Plain-data view for deep equality (Uint8Array subclasses and views compare by bytes). */
const plain = (v: unknown): unknown =>
  JSON.parse(JSON.stringify(v, (_k, x) => (x instanceof Uint8Array ? [...x] : x)));

t.test('every message survives an encode/decode round trip', async (t) => {
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(messageArb, (m) => {
          const bytes = encodeMessage(m).finish();
          assert.deepEqual(plain(decodeMessage(bytes)), plain(m));
        }),
        { numRuns: 2000 },
      ),
    '2000 random messages round-tripped',
  );
});

t.test('every message type has a distinct tag', async (t) => {
  const tags = Object.values(MessageTag);
  t.equal(new Set(tags).size, tags.length);
});

t.test('truncated and padded encodings are refused with WireError', async (t) => {
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(messageArb, fc.nat(), (m, cut) => {
          const bytes = encodeMessage(m).finish();
          const at = cut % bytes.length;
          assert.throws(() => decodeMessage(bytes.subarray(0, at)), WireError);
          const padded = new Uint8Array(bytes.length + 1);
          padded.set(bytes);
          assert.throws(() => decodeMessage(padded), WireError);
        }),
        { numRuns: 300 },
      ),
    '300 truncations and paddings refused',
  );
});

t.test('unknown tags and enum values are refused', async (t) => {
  t.throws(() => decodeMessage(Uint8Array.of(200, 1, 2, 3)), /unknown message tag/);
  // a voteResp whose reject flag is 2
  t.throws(() => decodeMessage(Uint8Array.of(MessageTag.voteResp, 1, 2, 3, 2)), /bad bool/);
  // a prop with one entry whose type tag is 7
  t.throws(
    () => decodeMessage(Uint8Array.of(MessageTag.prop, 1, 2, 0, 1, 1, 1, 7, 0)),
    /unknown entry type/,
  );
  // a prop claiming a billion entries in a 9-byte frame
  const w = new Writer().u8(MessageTag.prop).uvarint(1).uvarint(2).uvarint(0).uvarint(1e9);
  t.throws(() => decodeMessage(w.finish()), /exceeds frame/);
});

t.test('varints: exact to 2^53, minimal, bounded', async (t) => {
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(fc.maxSafeNat(), (n) => {
          const r = new Reader(new Writer().uvarint(n).finish());
          assert.equal(r.uvarint(), n);
          r.end();
        }),
      ),
    'random safe integers round-tripped',
  );
  t.throws(() => new Writer().uvarint(-1), WireError);
  t.throws(() => new Writer().uvarint(1.5), WireError);
  t.throws(() => new Writer().uvarint(2 ** 53), WireError);
  t.throws(() => new Reader(Uint8Array.of(0x80, 0x00)).uvarint(), /non-minimal/);
  t.throws(() => new Reader(new Uint8Array(9).fill(0xff)).uvarint(), /out of range/);
  t.throws(() => new Reader(Uint8Array.of(0x80)).uvarint(), /truncated/);
});

t.test('u64be keys sort like the numbers they hold', async (t) => {
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(fc.maxSafeNat(), fc.maxSafeNat(), (a, b) => {
          const ka = Buffer.from(new Writer().u64be(a).finish());
          const kb = Buffer.from(new Writer().u64be(b).finish());
          assert.equal(Math.sign(Buffer.compare(ka, kb)), Math.sign(a - b));
          assert.equal(new Reader(ka).u64be(), a);
        }),
        { numRuns: 500 },
      ),
    '500 key pairs ordered',
  );
});

t.test('invalid utf-8 text is refused', async (t) => {
  const bad = new Writer().bytes(Uint8Array.of(0xff, 0xfe)).finish();
  t.throws(() => new Reader(bad).string(), /invalid utf-8/);
  t.equal(new Reader(new Writer().string('héllo').finish()).string(), 'héllo');
});
