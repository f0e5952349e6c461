/**
 * Deeply nested txns, as etcd 3.4 answers them (asked of the real etcd with a raw gRPC
 * client): its --max-txn-ops budget (128) shrinks by each level's op count, so a txn of one op
 * per level nests 127 deep and is applied, and one level more (or any depth beyond, however
 * large) is refused with INVALID_ARGUMENT "etcdserver: too many operations in txn request".
 * Both faces answer alike, and a refused txn changes nothing. The requests are encoded by hand
 * (protobufjs's own encoder stops at its nesting limit).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import grpc from '@grpc/grpc-js';
import t from 'tap';
import { startSingle } from '../../server/helpers.js';
import { b, decode, type Msg, RawClient, s } from './client.js';

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 127) {
    out.push((n & 127) | 128);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}
const field = (no: number, body: Buffer) =>
  Buffer.concat([varint((no << 3) | 2), varint(body.length), body]);

/** TxnRequest bytes: `depth` levels of success[request_txn] around success[put k=value]. */
function nestedTxnBytes(depth: number, value: string): Buffer {
  const put = Buffer.concat([field(1, b('k')), field(2, b(value))]);
  let txn = field(2, field(2, put)); // TxnRequest{success: [RequestOp{request_put}]}
  for (let i = 0; i < depth; i++) txn = field(2, field(4, txn)); // wrap in request_txn
  return txn;
}

/** The same txn in etcd's JSON (base64 bytes), built as text: it may be deeper than a stack. */
function nestedTxnJson(depth: number, value: string): string {
  const put = `{"success":[{"request_put":{"key":"${b64('k')}","value":"${b64(value)}"}}]}`;
  return '{"success":[{"request_txn":'.repeat(depth) + put + '}]}'.repeat(depth);
}
const b64 = (x: string) => Buffer.from(x).toString('base64');

function txnRaw(c: RawClient, bytes: Buffer): Promise<{ err?: grpc.ServiceError; res?: Msg }> {
  return new Promise((resolve) =>
    c.client.makeUnaryRequest(
      '/etcdserverpb.KV/Txn',
      (x: Buffer) => x,
      (x: Buffer) => x,
      bytes,
      (err, res) =>
        resolve(err ? { err } : { res: decode('etcdserverpb.TxnResponse', res as Buffer) }),
    ),
  );
}

t.test('nested txns: applied up to etcd’s budget, refused beyond it, on both faces', async (t) => {
  const m = await startSingle(mkdtempSync(join(tmpdir(), 'grpc-nested-')));
  const c = new RawClient(m.clientUrls[0]!.host);
  const url = m.clientUrls[0]!.href.replace(/\/$/, '');
  t.teardown(async () => {
    c.close();
    await m.stop();
  });
  const value = async () => {
    const r = await c.call('/etcdserverpb.KV/Range', { key: b('k') });
    return { value: s(r.kvs?.[0]?.value), revision: r.header.revision as number };
  };
  const json = async (depth: number, v: string) => {
    const res = await fetch(`${url}/v3/kv/txn`, { method: 'POST', body: nestedTxnJson(depth, v) });
    return { status: res.status, body: (await res.json()) as Msg };
  };

  for (const depth of [60, 127]) {
    const { err, res } = await txnRaw(c, nestedTxnBytes(depth, `grpc-${depth}`));
    t.equal(err, undefined, `gRPC: a txn nested ${depth} deep is applied`);
    let inner = res!;
    for (let i = 0; i < depth; i++) inner = inner.responses[0].response_txn;
    t.ok(inner.responses[0].response_put, 'the innermost answer is the put’s');
    t.equal((await value()).value, `grpc-${depth}`);
    const viaJson = await json(depth, `json-${depth}`);
    t.equal(viaJson.status, 200, `JSON: a txn nested ${depth} deep is applied`);
    t.equal((await value()).value, `json-${depth}`);
  }

  const before = await value();
  for (const depth of [128, 200, 10_000]) {
    const { err } = await txnRaw(c, nestedTxnBytes(depth, 'never'));
    t.same(
      { code: err?.code, details: err?.details },
      {
        code: grpc.status.INVALID_ARGUMENT,
        details: 'etcdserver: too many operations in txn request',
      },
      `gRPC: ${depth} deep is refused as etcd refuses it`,
    );
    const viaJson = await json(depth, 'never');
    t.equal(viaJson.status, 400, `JSON: ${depth} deep is refused`);
    // Past Go's 10,000 JSON levels (four per nested txn) the body is refused before it is
    // parsed, as etcd's gateway refuses it; below that, by the txn budget.
    const message =
      depth * 4 > 10_000
        ? /^etcetera: the request body nests too deeply/
        : 'etcdserver: too many operations in txn request';
    t.match(viaJson.body, { code: 3, message });
  }
  t.same(await value(), before, 'the refused txns changed nothing');
});
