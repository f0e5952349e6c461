import fc from 'fast-check';
import t from 'tap';
import type { Command } from '../../src/store/index.js';
import { decodeCommand, encodeCommand } from '../../src/store/index.js';

t.test('commands round-trip, with Uint8Array and Buffer bytes alike', async (t) => {
  const bytes = fc.uint8Array({ maxLength: 40 });
  const asBuffer = bytes.map((b) => Buffer.from(b));
  const anyBytes = fc.oneof(bytes, asBuffer);
  const put = fc
    .record({ key: anyBytes, value: anyBytes, prevKv: fc.boolean() })
    .map((r) => ({ op: 'put' as const, ...r }));
  const txn = fc.array(fc.record({ key: anyBytes, value: anyBytes }), { maxLength: 4 }).map(
    (puts): Command => ({
      op: 'txn',
      compare: [],
      success: puts.map((p) => ({ type: 'put' as const, request: p })),
      failure: [],
    }),
  );
  fc.assert(
    fc.property(fc.oneof(put, txn), (c) => {
      const back = decodeCommand(encodeCommand(c as Command));
      const norm = (x: unknown) =>
        JSON.parse(
          JSON.stringify(x, (_k, v) =>
            v?.type === 'Buffer' ? v.data : v instanceof Uint8Array ? [...v] : v,
          ),
        );
      t.same(norm(back), norm(c));
      if (back.op === 'put')
        t.ok(back.key instanceof Uint8Array && back.value instanceof Uint8Array);
    }),
    { numRuns: 200 },
  );
  const b = decodeCommand(
    encodeCommand({ op: 'put', key: Buffer.from('k'), value: Buffer.from('v') }),
  );
  t.ok(
    b.op === 'put' && b.key instanceof Uint8Array && Buffer.from(b.key).toString() === 'k',
    'a Buffer key decodes to bytes',
  );
});

t.test('garbage is refused as corrupt', async (t) => {
  t.throws(() => decodeCommand(new Uint8Array([1, 2, 3])), { code: 'ERR_CORRUPT' });
  t.throws(() => decodeCommand(new Uint8Array(Buffer.from('{"op":"nope"}'))), {
    code: 'ERR_CORRUPT',
  });
});
