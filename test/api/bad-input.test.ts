/**
 * Bad input over HTTP: every malformed, oversized or refused request gets its own error
 * (HTTP status, gRPC code, message), changes nothing — the whole keyspace, the revision, the
 * leases and the members are the same before and after — and the server still answers.
 * Runs against the store double and a real member.
 */
import { request } from 'node:http';
import t from 'tap';
import { send, startDouble, startMember, type Target } from './servers.js';

const b = (s: string) => Buffer.from(s).toString('base64');
const K = b('k');

interface BadCase {
  name: string;
  path: string;
  method?: string;
  body: string;
  status: number;
  code: number;
  /** A piece of the message that names the cause. */
  message: string;
}

const deep = (levels: number) => {
  let txn = `{"success":[{"request_put":{"key":"${K}","value":"${K}"}}]}`;
  for (let i = 0; i < levels; i++) txn = `{"success":[{"request_txn":${txn}}]}`;
  return txn;
};

const CASES: BadCase[] = [
  // malformed JSON
  {
    name: 'not JSON',
    path: '/v3/kv/put',
    body: 'put k v',
    status: 400,
    code: 3,
    message: 'request body is not valid JSON',
  },
  {
    name: 'a truncated object',
    path: '/v3/kv/put',
    body: `{"key":"${K}",`,
    status: 400,
    code: 3,
    message: 'not valid JSON',
  },
  {
    name: 'trailing garbage',
    path: '/v3/kv/put',
    body: `{"key":"${K}"} {}`,
    status: 400,
    code: 3,
    message: 'not valid JSON',
  },
  {
    name: 'a byte-order mark',
    path: '/v3/kv/put',
    body: `\ufeff{"key":"${K}"}`,
    status: 400,
    code: 3,
    message: 'not valid JSON',
  },
  {
    name: 'an array body',
    path: '/v3/kv/put',
    body: '[1,2]',
    status: 400,
    code: 3,
    message: 'body: expected a JSON object, got an array',
  },
  {
    name: 'a number body',
    path: '/v3/kv/txn',
    body: '5',
    status: 400,
    code: 3,
    message: 'expected a JSON object, got number 5',
  },
  // bad base64
  {
    name: 'key without padding',
    path: '/v3/kv/put',
    body: '{"key":"aw","value":"dg=="}',
    status: 400,
    code: 3,
    message: 'key: illegal base64 data at input byte 0',
  },
  {
    name: 'value with a bad character',
    path: '/v3/kv/put',
    body: `{"key":"${K}","value":"dg*="}`,
    status: 400,
    code: 3,
    message: 'value: illegal base64 data at input byte 2',
  },
  {
    name: 'range_end URL-safe',
    path: '/v3/kv/deleterange',
    body: `{"key":"${K}","range_end":"_w=="}`,
    status: 400,
    code: 3,
    message: 'range_end: illegal base64 data at input byte 0',
  },
  {
    name: 'a compare value',
    path: '/v3/kv/txn',
    body: `{"compare":[{"key":"${K}","target":"VALUE","value":"???="}]}`,
    status: 400,
    code: 3,
    message: 'compare.0.value: illegal base64',
  },
  {
    name: 'a nested op key',
    path: '/v3/kv/txn',
    body: '{"success":[{"request_txn":{"failure":[{"request_put":{"key":"%%%%"}}]}}]}',
    status: 400,
    code: 3,
    message: 'success.0.request_txn.failure.0.request_put.key: illegal base64 data at input byte 0',
  },
  // wrong types
  {
    name: 'key as a number',
    path: '/v3/kv/put',
    body: '{"key":1}',
    status: 400,
    code: 3,
    message: 'key: expected base64 bytes, got number 1',
  },
  {
    name: 'value as an object',
    path: '/v3/kv/put',
    body: `{"key":"${K}","value":{}}`,
    status: 400,
    code: 3,
    message: 'value: expected base64 bytes, got an object',
  },
  {
    name: 'lease as a word',
    path: '/v3/kv/put',
    body: `{"key":"${K}","lease":"abc"}`,
    status: 400,
    code: 3,
    message: 'lease: expected an int64, got string "abc"',
  },
  {
    name: 'prev_kv as a string',
    path: '/v3/kv/put',
    body: `{"key":"${K}","prev_kv":"yes"}`,
    status: 400,
    code: 3,
    message: 'prev_kv: expected a boolean',
  },
  {
    name: 'limit as an object',
    path: '/v3/kv/range',
    body: `{"key":"${K}","limit":{}}`,
    status: 400,
    code: 3,
    message: 'limit: expected an int64',
  },
  {
    name: 'sort_order as a boolean',
    path: '/v3/kv/range',
    body: `{"key":"${K}","sort_order":true}`,
    status: 400,
    code: 3,
    message: 'sort_order: expected one of NONE, ASCEND, DESCEND',
  },
  {
    name: 'a compare that is not an object',
    path: '/v3/kv/txn',
    body: '{"compare":[1]}',
    status: 400,
    code: 3,
    message: 'compare.0: expected a JSON object, got number 1',
  },
  {
    name: 'success as a string',
    path: '/v3/kv/txn',
    body: '{"success":"x"}',
    status: 400,
    code: 3,
    message: 'success: expected an array',
  },
  {
    name: 'request_put as a string',
    path: '/v3/kv/txn',
    body: '{"success":[{"request_put":"x"}]}',
    status: 400,
    code: 3,
    message: 'success.0.request_put: expected a JSON object, got string "x"',
  },
  {
    name: 'TTL as a fraction',
    path: '/v3/lease/grant',
    body: '{"TTL":1.5}',
    status: 400,
    code: 3,
    message: 'TTL: expected an int64',
  },
  // unknown fields
  {
    name: 'an unknown top-level field',
    path: '/v3/kv/put',
    body: `{"key":"${K}","valu":"dg=="}`,
    status: 400,
    code: 3,
    message: 'unknown request field: "valu"',
  },
  {
    name: 'an unknown compare field',
    path: '/v3/kv/txn',
    body: `{"compare":[{"key":"${K}","targt":"VALUE"}]}`,
    status: 400,
    code: 3,
    message: '"targt" in compare.0',
  },
  {
    name: 'an unknown field in a nested txn',
    path: '/v3/kv/txn',
    body: '{"success":[{"request_txn":{"succes":[]}}]}',
    status: 400,
    code: 3,
    message: '"succes" in success.0.request_txn',
  },
  {
    name: 'a __proto__ field',
    path: '/v3/kv/put',
    body: `{"key":"${K}","__proto__":{"x":1}}`,
    status: 400,
    code: 3,
    message: 'unknown request field: "__proto__"',
  },
  // numbers and enums out of range
  {
    name: 'a revision beyond 2^53',
    path: '/v3/kv/range',
    body: `{"key":"${K}","revision":"9007199254740993"}`,
    status: 400,
    code: 3,
    message: 'revision: expected an integer within',
  },
  {
    name: 'a negative lease ID',
    path: '/v3/lease/revoke',
    body: '{"ID":-1}',
    status: 400,
    code: 3,
    message: 'ID: lease IDs are 0..2^53-1',
  },
  {
    name: 'an unknown sort target',
    path: '/v3/kv/range',
    body: `{"key":"${K}","sort_target":"SIZE"}`,
    status: 400,
    code: 3,
    message: 'unknown value "SIZE" for enum SortTarget',
  },
  {
    name: 'a compare result number out of range',
    path: '/v3/kv/txn',
    body: `{"compare":[{"key":"${K}","result":7}]}`,
    status: 400,
    code: 3,
    message: 'unknown value 7 for enum Compare_CompareResult',
  },
  {
    name: 'a member ID past uint64',
    path: '/v3/cluster/member/remove',
    body: '{"ID":"18446744073709551616"}',
    status: 400,
    code: 3,
    message: 'ID: expected a uint64',
  },
  // ops
  {
    name: 'an op with two requests',
    path: '/v3/kv/txn',
    body: `{"success":[{"request_put":{"key":"${K}"},"request_range":{"key":"${K}"}}]}`,
    status: 400,
    code: 3,
    message: 'success.0: only one of request_range',
  },
  {
    name: 'an op with no request',
    path: '/v3/kv/txn',
    body: '{"success":[{"request_put":null}]}',
    status: 400,
    code: 3,
    message: 'etcdserver: key not found',
  },
  {
    name: 'a txn nested 200 deep',
    path: '/v3/kv/txn',
    body: deep(200),
    status: 400,
    code: 3,
    message: 'etcdserver: too many operations in txn request',
  },
  {
    // 20,000 JSON levels: past Go's encoding/json bound (10,000), which etcd's gateway has too.
    name: 'a txn nested 5000 deep',
    path: '/v3/kv/txn',
    body: deep(5000),
    status: 400,
    code: 3,
    message: 'etcetera: the request body nests too deeply',
  },
  {
    name: '129 compares',
    path: '/v3/kv/txn',
    body: JSON.stringify({ compare: Array.from({ length: 129 }, () => ({ key: K })) }),
    status: 400,
    code: 3,
    message: 'etcdserver: too many operations in txn request',
  },
  {
    name: 'a put and a delete of one key',
    path: '/v3/kv/txn',
    body: `{"success":[{"request_put":{"key":"${K}"}},{"request_delete_range":{"key":"${K}"}}]}`,
    status: 400,
    code: 3,
    message: 'etcdserver: duplicate key given in txn request',
  },
  // the store's refusals
  {
    name: 'a put with no key',
    path: '/v3/kv/put',
    body: '{"value":"dg=="}',
    status: 400,
    code: 3,
    message: 'etcdserver: key is not provided',
  },
  {
    name: 'a compare with an empty key',
    path: '/v3/kv/txn',
    body: '{"compare":[{"key":""}]}',
    status: 400,
    code: 3,
    message: 'etcdserver: key is not provided',
  },
  {
    name: 'a put with a missing lease',
    path: '/v3/kv/put',
    body: `{"key":"${K}","lease":"77"}`,
    status: 404,
    code: 5,
    message: 'etcdserver: requested lease not found',
  },
  {
    name: 'ignore_value on a missing key',
    path: '/v3/kv/put',
    body: `{"key":"${b('nope')}","ignore_value":true}`,
    status: 400,
    code: 3,
    message: 'etcdserver: key not found',
  },
  {
    name: 'a txn put with a missing lease',
    path: '/v3/kv/txn',
    body: `{"success":[{"request_put":{"key":"${K}","lease":5}}]}`,
    status: 404,
    code: 5,
    message: 'etcdserver: requested lease not found',
  },
  {
    name: 'a txn range at a future revision',
    path: '/v3/kv/txn',
    body: `{"success":[{"request_put":{"key":"${K}"}},{"request_range":{"key":"${K}","revision":99}}]}`,
    status: 400,
    code: 11,
    message: 'etcdserver: mvcc: required revision is a future revision',
  },
  {
    name: 'a compaction into the future',
    path: '/v3/kv/compaction',
    body: '{"revision":99}',
    status: 400,
    code: 11,
    message: 'etcdserver: mvcc: required revision is a future revision',
  },
  {
    name: 'a lease TTL too large',
    path: '/v3/lease/grant',
    body: '{"TTL":"9000000001"}',
    status: 400,
    code: 11,
    message: 'etcdserver: too large lease TTL',
  },
  {
    name: 'revoking a missing lease',
    path: '/v3/lease/revoke',
    body: '{"ID":5}',
    status: 404,
    code: 5,
    message: 'etcdserver: requested lease not found',
  },
  {
    name: 'a member with a bad peer URL',
    path: '/v3/cluster/member/add',
    body: '{"peerURLs":["ftp://h:1"]}',
    status: 400,
    code: 3,
    message: 'etcdserver: given member URLs are invalid',
  },
  {
    name: 'removing an unknown member',
    path: '/v3/cluster/member/remove',
    body: '{"ID":"42"}',
    status: 404,
    code: 5,
    message: 'etcdserver: member not found',
  },
  // routing
  {
    name: 'an unknown path',
    path: '/v3/kv/rnage',
    body: '{}',
    status: 404,
    code: 5,
    message: 'no such API route: /v3/kv/rnage',
  },
  {
    name: 'GET on a POST route',
    method: 'GET',
    path: '/v3/kv/put',
    body: '',
    status: 405,
    code: 12,
    message: 'method not allowed',
  },
  {
    name: 'DELETE on /metrics',
    method: 'DELETE',
    path: '/metrics',
    body: '',
    status: 405,
    code: 12,
    message: 'method not allowed',
  },
];

/** Everything a request could change, read over HTTP. */
async function state(url: string): Promise<unknown> {
  const read = async (path: string, body: string) => {
    const r = await send(url, 'POST', path, body);
    const j = JSON.parse(r.text) as Record<string, unknown>;
    delete (j.header as Record<string, unknown> | undefined)?.raft_term;
    return j;
  };
  return {
    keys: await read('/v3/kv/range', '{"key":"AA==","range_end":"AA=="}'),
    leases: await read('/v3/lease/leases', '{}'),
    members: await read('/v3/cluster/member/list', '{}'),
  };
}

async function seed(url: string): Promise<void> {
  await send(url, 'POST', '/v3/lease/grant', '{"TTL":300,"ID":1234}');
  for (const [k, v] of [
    ['k', 'v'],
    ['a', '1'],
    ['z', '26'],
  ]) {
    await send(
      url,
      'POST',
      '/v3/kv/put',
      JSON.stringify({ key: b(k as string), value: b(v as string), lease: k === 'a' ? 1234 : 0 }),
    );
  }
}

/** A body of `bytes` bytes sent in chunks; resolves with the status and text of the answer. */
function sendHuge(url: string, bytes: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(`${url}/v3/kv/put`);
    const req = request({
      host: u.hostname,
      port: u.port,
      path: u.pathname,
      method: 'POST',
      headers: { 'Content-Length': bytes },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
      );
    });
    req.on('error', reject);
    const chunk = Buffer.alloc(64 * 1024, 'A');
    let sent = 0;
    const pump = () => {
      while (sent < bytes) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    req.write(`{"key":"${K}","value":"`);
    pump();
  });
}

for (const [label, start] of [
  ['store double', (dir: string) => startDouble(dir, { maxRequestBytes: 64 * 1024 })],
  ['real member', startMember],
] as const) {
  t.test(`bad input changes nothing (${label})`, async (t) => {
    const target: Target = await start(t.testdir());
    t.teardown(() => target.close());
    await seed(target.url);
    const before = await state(target.url);
    for (const c of CASES) {
      const r = await send(target.url, c.method ?? 'POST', c.path, c.body);
      const body = JSON.parse(r.text) as { error: string; message: string; code: number };
      t.equal(r.status, c.status, `${c.name}: HTTP ${c.status}`);
      t.equal(body.code, c.code, `${c.name}: code ${c.code}`);
      t.ok(body.message.includes(c.message), `${c.name}: "${body.message}" names the cause`);
      t.equal(body.error, body.message, `${c.name}: error and message agree`);
    }
    t.same(await state(target.url), before, 'keys, revision, leases and members are as before');
    t.equal((await send(target.url, 'GET', '/health')).status, 200, 'the server still answers');
  });
}

t.test('size limits (store double, --max-request-bytes 64 KiB)', async (t) => {
  const target = await startDouble(t.testdir(), { maxRequestBytes: 64 * 1024 });
  t.teardown(() => target.close());
  await seed(target.url);
  const before = await state(target.url);
  const put = (bytes: number) =>
    JSON.stringify({ key: K, value: Buffer.alloc(bytes, 1).toString('base64') });
  const over = await send(target.url, 'POST', '/v3/kv/put', put(65 * 1024));
  t.equal(over.status, 400);
  t.match(
    JSON.parse(over.text),
    { code: 3, message: 'etcdserver: request is too large' },
    'a decoded request over the limit',
  );
  const huge = await sendHuge(target.url, 50 * 1024 * 1024);
  t.equal(huge.status, 400, 'a 50 MiB body is refused');
  t.match(JSON.parse(huge.text), { code: 3, message: 'etcdserver: request is too large' });
  t.same(await state(target.url), before, 'nothing changed');
  const under = await send(target.url, 'POST', '/v3/kv/put', put(60 * 1024));
  t.equal(under.status, 200, 'a request under the limit passes');
});
