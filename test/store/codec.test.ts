import fc from 'fast-check';
import t from 'tap';
import { encodeCommandJson } from '../../src/store/codec.js';
import type { Command } from '../../src/store/index.js';
import { decodeCommand, encodeCommand } from '../../src/store/index.js';

const bytes = fc.uint8Array({ maxLength: 40 });
const anyBytes = fc.oneof(
  bytes,
  bytes.map((b) => Buffer.from(b)),
);
const stamp = fc.option(fc.record({ user: fc.string(), revision: fc.nat() }), { nil: undefined });
const num = fc.oneof(fc.nat(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }));
const putReq = fc.record(
  {
    key: anyBytes,
    value: anyBytes,
    lease: num,
    prevKv: fc.boolean(),
    ignoreValue: fc.boolean(),
    ignoreLease: fc.boolean(),
  },
  { requiredKeys: ['key', 'value'] },
);
const delReq = fc.record(
  { key: anyBytes, rangeEnd: anyBytes, prevKv: fc.boolean() },
  { requiredKeys: ['key'] },
);
const rangeReq = fc.record(
  {
    key: anyBytes,
    rangeEnd: anyBytes,
    limit: fc.nat(),
    revision: fc.nat(),
    sortOrder: fc.constantFrom('NONE', 'ASCEND', 'DESCEND'),
    sortTarget: fc.constantFrom('KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE'),
    keysOnly: fc.boolean(),
    countOnly: fc.boolean(),
    minModRevision: fc.nat(),
  },
  { requiredKeys: ['key'] },
);
const compare = fc.oneof(
  fc.record({
    key: anyBytes,
    result: fc.constantFrom('EQUAL', 'GREATER', 'LESS', 'NOT_EQUAL'),
    target: fc.constant('MOD'),
    modRevision: fc.nat(),
  }),
  fc.record({
    key: anyBytes,
    rangeEnd: anyBytes,
    result: fc.constant('EQUAL'),
    target: fc.constant('VALUE'),
    value: anyBytes,
  }),
);
const { txnReq } = fc.letrec((tie) => ({
  op: fc.oneof(
    { depthSize: 'small' },
    fc.record({ type: fc.constant('put'), request: putReq }),
    fc.record({ type: fc.constant('deleteRange'), request: delReq }),
    fc.record({ type: fc.constant('range'), request: rangeReq }),
    fc.record({ type: fc.constant('txn'), request: tie('txnReq') }),
  ),
  txnReq: fc.record({
    compare: fc.array(compare, { maxLength: 3 }),
    success: fc.array(tie('op'), { maxLength: 3 }),
    failure: fc.array(tie('op'), { maxLength: 3 }),
  }),
}));
const command: fc.Arbitrary<Command> = fc.oneof(
  fc.tuple(putReq, stamp).map(([r, auth]) => ({ op: 'put' as const, ...r, auth })),
  fc.tuple(delReq, stamp).map(([r, auth]) => ({ op: 'deleteRange' as const, ...r, auth })),
  fc.tuple(txnReq, stamp).map(([r, auth]) => ({ op: 'txn', ...(r as object), auth }) as Command),
  fc.record({ op: fc.constant('compact' as const), revision: fc.nat() }),
  fc.record({ op: fc.constant('leaseGrant' as const), id: fc.nat(), ttl: fc.integer() }),
  fc.record({
    op: fc.constant('alarm' as const),
    action: fc.constantFrom('activate' as const, 'deactivate' as const),
    memberId: fc.string(),
    alarm: fc.constantFrom('NOSPACE' as const, 'CORRUPT' as const),
  }),
  fc.record({
    op: fc.constant('auth' as const),
    request: fc.oneof(
      fc.record({ type: fc.constant('userAdd' as const), name: fc.string() }),
      fc.record({ type: fc.constant('roleAdd' as const), name: fc.string() }),
      fc.record({
        type: fc.constant('roleRevokePermission' as const),
        name: fc.string(),
        key: anyBytes,
        rangeEnd: anyBytes,
      }),
    ),
  }),
  fc.constant({ op: 'noop' as const }),
);

/** The command as plain data: bytes as number arrays, undefined properties gone, -0 as 0. */
const norm = (x: unknown) =>
  JSON.parse(
    JSON.stringify(x, (_k, v) =>
      v?.type === 'Buffer' ? v.data : v instanceof Uint8Array ? [...v] : v,
    ),
  );

t.test('commands round-trip through the binary form, as through the JSON form', async (t) => {
  fc.assert(
    fc.property(command, (c) => {
      const bin = encodeCommand(c);
      t.equal(bin[0], 1, 'binary, version 1');
      const back = decodeCommand(bin);
      t.same(norm(back), norm(c));
      t.same(norm(back), norm(decodeCommand(encodeCommandJson(c))), 'as the JSON form decodes');
      t.same([...encodeCommand(c)], [...bin], 'deterministic');
    }),
    { numRuns: 300 },
  );
  const b = decodeCommand(
    encodeCommand({ op: 'put', key: Buffer.from('k'), value: Buffer.from('v') }),
  );
  t.ok(
    b.op === 'put' && b.key instanceof Uint8Array && Buffer.from(b.key).toString() === 'k',
    'a Buffer key decodes to bytes',
  );
});

t.test('decoded bytes are copies, not views of the entry', async (t) => {
  const entry = encodeCommand({ op: 'put', key: Buffer.from('k'), value: Buffer.from('vvv') });
  const c = decodeCommand(entry);
  if (c.op !== 'put') throw new Error('not a put');
  t.not(c.value.buffer, entry.buffer);
  t.equal(c.value.byteLength, c.value.buffer.byteLength, 'own backing store');
});

t.test('the JSON form of earlier versions is still read', async (t) => {
  // Bytes as etcetera wrote them before the binary form (its encoder's exact output).
  const old = Buffer.from(
    '{"op":"put","key":{"$b":"Zm9v"},"value":{"$b":"YmFy"},"prevKv":true,"auth":{"user":"root","revision":3}}',
  );
  const c = decodeCommand(new Uint8Array(old));
  t.same(norm(c), {
    op: 'put',
    key: [...Buffer.from('foo')],
    value: [...Buffer.from('bar')],
    prevKv: true,
    auth: { user: 'root', revision: 3 },
  });
  t.same([...encodeCommandJson(c)], [...old], 'the kept encoder writes the old bytes');
});

t.test('nested txns: 127 levels round-trip; past the bound the encoder refuses', async (t) => {
  const nested = (depth: number): Command => {
    let txn: Extract<Command, { op: 'txn' }> = {
      op: 'txn',
      compare: [],
      success: [{ type: 'put', request: { key: Buffer.from('k'), value: Buffer.from('v') } }],
      failure: [],
    };
    for (let i = 0; i < depth; i++) {
      const { op: _op, ...request } = txn;
      txn = { op: 'txn', compare: [], success: [{ type: 'txn', request }], failure: [] };
    }
    return txn;
  };
  const c = nested(127);
  t.same(norm(decodeCommand(encodeCommand(c))), norm(c));
  t.throws(() => encodeCommand(nested(400)), { code: 'ERR_NESTING_TOO_DEEP' });
});

t.test('garbage is refused as corrupt', async (t) => {
  t.throws(() => decodeCommand(new Uint8Array([2, 2, 3])), { code: 'ERR_CORRUPT' });
  t.throws(() => decodeCommand(new Uint8Array([])), { code: 'ERR_CORRUPT' });
  t.throws(() => decodeCommand(new Uint8Array(Buffer.from('{"op":"nope"}'))), {
    code: 'ERR_CORRUPT',
  });
  t.throws(() => decodeCommand(new Uint8Array(Buffer.from('{"op":'))), { code: 'ERR_CORRUPT' });
  const good = encodeCommand({ op: 'put', key: Buffer.from('key'), value: Buffer.alloc(300) });
  for (let n = 1; n < good.length; n += 7)
    t.throws(() => decodeCommand(good.subarray(0, n)), { code: 'ERR_CORRUPT' }, `cut at ${n}`);
  t.throws(() => decodeCommand(new Uint8Array([...good, 0])), { code: 'ERR_CORRUPT' }, 'trailing');
  t.throws(() => decodeCommand(new Uint8Array([1, 0x09])), { code: 'ERR_CORRUPT' }, 'unknown tag');
  t.throws(
    () => decodeCommand(new Uint8Array([1, 0x08, 1, 0x7f, 0x00])),
    { code: 'ERR_CORRUPT' },
    'unknown name index',
  );
  t.throws(
    () => decodeCommand(new Uint8Array([1, 0x07, 0xff, 0xff, 0xff, 0x0f])),
    { code: 'ERR_CORRUPT' },
    'a count past the end',
  );
  t.throws(
    () => decodeCommand(new Uint8Array([1, ...new Array(300).fill(0x07).flatMap((x) => [x, 1])])),
    { code: 'ERR_CORRUPT' },
    'nested too deeply',
  );
  t.throws(
    () => decodeCommand(new Uint8Array([1, 0x08, 0])),
    { code: 'ERR_CORRUPT' },
    'an object without op',
  );
});
