/**
 * The :authority fix of the client listener (src/server/h2-authority.ts), against an HPACK
 * model: hpack.js's compressor plays the client (Huffman or not, dynamic table), and its
 * decompressor plays node:http2. With only the connection's first header block rewritten,
 * every block of the connection decodes to what the client sent, with a URL authority as
 * host:port: the two dynamic tables stay in step.
 */
import fc from 'fast-check';
import hpackJs from 'hpack.js';
import t from 'tap';
import { authorityOfUrl, H2Preamble, rewriteAuthority } from '../../src/server/h2-authority.js';

interface Header {
  name: string;
  value: string;
  huffman?: boolean;
  neverIndex?: boolean;
}
// biome-ignore lint/suspicious/noExplicitAny: hpack.js's streams are untyped
const hpack = hpackJs as any;

function encodeAll(blocks: Header[][]): Buffer[] {
  const c = hpack.compressor.create({ table: { size: 4096 } });
  return blocks.map((headers) => {
    c.write(headers);
    const out: Buffer[] = [];
    for (let ch = c.read(); ch !== null; ch = c.read()) out.push(ch);
    return Buffer.concat(out);
  });
}

function decodeAll(blocks: Buffer[]): Array<Array<[string, string]>> {
  const d = hpack.decompressor.create({ table: { size: 4096 } });
  return blocks.map((b) => {
    d.write(b);
    d.execute();
    const out: Array<[string, string]> = [];
    for (let h = d.read(); h !== null; h = d.read()) out.push([h.name, h.value]);
    return out;
  });
}

const token = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);
const header = fc.record({
  name: token,
  value: fc.stringMatching(/^[ -~]{0,20}$/),
  huffman: fc.boolean(),
  neverIndex: fc.boolean(),
});
const authority = fc
  .tuple(
    fc.constantFrom('127.0.0.1', 'localhost', '[::1]', 'member-1.example'),
    fc.integer({ min: 1, max: 65535 }),
    fc.constantFrom('', 'http://', 'https://'),
    fc.constantFrom('', '/'),
  )
  .map(([host, port, scheme, slash]) =>
    scheme === '' ? `${host}:${port}` : `${scheme}${host}:${port}${slash}`,
  );

t.test('authorityOfUrl: a URL becomes host:port, anything else is left alone', async (t) => {
  t.equal(authorityOfUrl('http://127.0.0.1:2379'), '127.0.0.1:2379');
  t.equal(authorityOfUrl('https://[::1]:2379/'), '[::1]:2379');
  t.equal(authorityOfUrl('127.0.0.1:2379'), undefined);
  t.equal(authorityOfUrl('http://127.0.0.1:2379/v3/kv'), undefined, 'not with a path');
  t.equal(authorityOfUrl('http://u@h:1'), undefined, 'not with user info');
});

t.test('a block without a URL authority is not rewritten', async (t) => {
  const [b] = encodeAll([[{ name: ':authority', value: '127.0.0.1:2379', huffman: true }]]);
  t.equal(rewriteAuthority(b!), undefined);
  t.equal(
    rewriteAuthority(Buffer.from([0xff, 0xff])),
    undefined,
    'nor a block that does not parse',
  );
});

t.test('rewriting the first block keeps every later block decoding as sent', async (t) => {
  fc.assert(
    fc.property(
      authority,
      fc.boolean(),
      fc.array(fc.array(header, { maxLength: 5 }), { minLength: 1, maxLength: 5 }),
      (auth, huffman, extra) => {
        const sent: Header[][] = extra.map((hs) => [
          { name: ':method', value: 'POST' },
          { name: ':path', value: '/etcdserverpb.Maintenance/Status', huffman },
          { name: ':authority', value: auth, huffman },
          ...hs,
        ]);
        const blocks = encodeAll(sent);
        const first = rewriteAuthority(blocks[0]!);
        const isUrl = authorityOfUrl(auth) !== undefined;
        if (!isUrl) return first === undefined;
        const decoded = decodeAll([first!, ...blocks.slice(1)]);
        const want = sent.map((hs) =>
          hs.map((h): [string, string] => [
            h.name,
            h.name === ':authority' ? authorityOfUrl(h.value)! : h.value,
          ]),
        );
        t.same(decoded, want);
        return true;
      },
    ),
    { numRuns: 300 },
  );
});

t.test('bytes that cannot open a connection are handed over at once, not held', async (t) => {
  const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
  const settings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
  const cases: [string, Buffer][] = [
    ['text after the preface', Buffer.from('not a settings frame at all, just bytes')],
    ['a first frame that is not SETTINGS', Buffer.from([0, 0, 1, 0, 0, 0, 0, 0, 1, 0x61])],
    ['SETTINGS on a stream', Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 3])],
    ['a 16 MiB frame', Buffer.from([0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0])],
    [
      'a 16 MiB frame after SETTINGS',
      Buffer.concat([settings, Buffer.from([0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0])]),
    ],
  ];
  for (const [what, garbage] of cases) {
    const p = new H2Preamble(preface.length);
    const step = p.push(Buffer.concat([preface, garbage]));
    t.equal(step.kind, 'done', `${what}: handed over`);
    if (step.kind === 'done')
      t.same(step.bytes, Buffer.concat([preface, garbage]), `${what}: unchanged`);
  }
  // A well-formed opening is still held for the first request.
  const ok = new H2Preamble(preface.length);
  t.equal(ok.push(Buffer.concat([preface, settings])).kind, 'more', 'a client SETTINGS is read on');
});
