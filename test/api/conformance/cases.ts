/**
 * The conformance request list: one ordered session of requests against a fresh server
 * (revision 1, no keys), sent to etcetera and, when installed, to a real etcd 3.4.
 *
 * expected.json holds etcd's answers, normalised (normalise.ts) — recorded from the real
 * etcd with ETCETERA_RECORD_CONFORMANCE=1. Where etcetera answers differently on purpose,
 * the case says so in `ours` (our answer) and `why`; etcd's recorded answer stays in
 * expected.json, so the difference is shown, not hidden.
 */
import type { Normaliser } from './normalise.js';

export interface Case {
  name: string;
  method?: 'GET' | 'POST';
  path: string;
  /** The raw body (may be malformed on purpose); `{{name}}` takes a captured value. */
  body?: string | (() => string);
  normalise?: Normaliser[];
  /** Stores a value of the answer for later bodies: name → path into the JSON answer. */
  capture?: { name: string; path: string[] };
  /** A deliberate difference from etcd: our answer, normalised, and the reason. */
  ours?: { status: number; body: unknown; why: string };
}

const b = (s: string) => Buffer.from(s).toString('base64');
const ALL = `"key":"AA==","range_end":"AA=="`;
const bigValue = (kib: number) => () =>
  JSON.stringify({ key: b('big'), value: Buffer.alloc(kib * 1024, 120).toString('base64') });

const decodeError = (why: string) => ({
  status: 400,
  body: { error: '<decode error>', message: '<decode error>', code: 3 },
  why,
});

export const CASES: Case[] = [
  // --- range and put basics ------------------------------------------------------------
  { name: 'range of a missing key', path: '/v3/kv/range', body: `{"key":"${b('a')}"}` },
  { name: 'put a=1', path: '/v3/kv/put', body: `{"key":"${b('a')}","value":"${b('1')}"}` },
  {
    name: 'put a=2 with prev_kv',
    path: '/v3/kv/put',
    body: `{"key":"${b('a')}","value":"${b('2')}","prev_kv":true}`,
  },
  { name: 'put b with an empty value', path: '/v3/kv/put', body: `{"key":"${b('b')}","value":""}` },
  { name: 'put c with no value field', path: '/v3/kv/put', body: `{"key":"${b('c')}"}` },
  { name: 'range a', path: '/v3/kv/range', body: `{"key":"${b('a')}"}` },
  { name: 'range every key', path: '/v3/kv/range', body: `{${ALL}}` },
  { name: 'range with limit 1 sets more', path: '/v3/kv/range', body: `{${ALL},"limit":1}` },
  { name: 'range count_only', path: '/v3/kv/range', body: `{${ALL},"count_only":true}` },
  { name: 'range keys_only', path: '/v3/kv/range', body: `{${ALL},"keys_only":true}` },
  {
    name: 'range sorted by value, descending (enum names)',
    path: '/v3/kv/range',
    body: `{${ALL},"sort_order":"DESCEND","sort_target":"VALUE"}`,
  },
  {
    name: 'range sorted by value, descending (enum numbers)',
    path: '/v3/kv/range',
    body: `{${ALL},"sort_order":2,"sort_target":4}`,
  },
  {
    name: 'range sort_target MOD alone sorts ascending',
    path: '/v3/kv/range',
    body: `{${ALL},"sort_target":"MOD","keys_only":true}`,
  },
  {
    name: 'range at a past revision',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","revision":2}`,
  },
  {
    name: 'range at a future revision',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","revision":100}`,
  },
  {
    name: 'range min_mod_revision filters, count does not',
    path: '/v3/kv/range',
    body: `{${ALL},"min_mod_revision":"4","keys_only":true}`,
  },
  {
    name: 'range max_create_revision with limit',
    path: '/v3/kv/range',
    body: `{${ALL},"max_create_revision":"3","keys_only":true,"limit":1}`,
  },
  {
    name: 'range key-descending with limit',
    path: '/v3/kv/range',
    body: `{${ALL},"sort_order":"DESCEND","keys_only":true,"limit":1}`,
  },
  {
    name: 'range with JSON (camelCase) field names',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","rangeEnd":"${b('z')}","countOnly":true}`,
  },
  {
    name: 'range with both names of a field: the later wins',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","count_only":true,"countOnly":false}`,
  },
  { name: 'range limit as a string', path: '/v3/kv/range', body: `{${ALL},"limit":"1"}` },
  {
    name: 'range limit as a string with spaces',
    path: '/v3/kv/range',
    body: `{${ALL},"limit":" 1"}`,
  },
  {
    name: 'range revision -1 reads the current revision',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","revision":"-1"}`,
  },
  {
    name: 'range limit -1 is no limit',
    path: '/v3/kv/range',
    body: `{${ALL},"limit":-1,"keys_only":true}`,
  },
  {
    name: 'range with null fields',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","range_end":null,"keys_only":null,"limit":null}`,
  },
  {
    name: 'range with an empty range_end is one key',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","range_end":""}`,
  },
  { name: 'range with an empty body', path: '/v3/kv/range', body: '' },
  { name: 'range with a null body', path: '/v3/kv/range', body: 'null' },
  { name: 'range with no key', path: '/v3/kv/range', body: '{}' },

  // --- bodies etcd's gateway cannot decode (messages are Go's; code and status compared) ---
  { name: 'malformed JSON', path: '/v3/kv/range', body: 'not json', normalise: ['decode'] },
  { name: 'a JSON array body', path: '/v3/kv/range', body: '[]', normalise: ['decode'] },
  { name: 'a JSON string body', path: '/v3/kv/range', body: '"str"', normalise: ['decode'] },
  {
    name: 'a truncated object',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}",`,
    normalise: ['decode'],
  },
  {
    name: 'base64 without padding',
    path: '/v3/kv/range',
    body: '{"key":"YQ"}',
    normalise: ['decode'],
  },
  {
    name: 'base64 with extra padding',
    path: '/v3/kv/range',
    body: '{"key":"YQ==="}',
    normalise: ['decode'],
  },
  {
    name: 'base64 with a space',
    path: '/v3/kv/range',
    body: '{"key":"YW Jj"}',
    normalise: ['decode'],
  },
  { name: 'URL-safe base64', path: '/v3/kv/range', body: '{"key":"_-8="}', normalise: ['decode'] },
  {
    name: 'bytes given as a number',
    path: '/v3/kv/range',
    body: '{"key":1}',
    normalise: ['decode'],
  },
  {
    name: 'int64 given as a word',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","limit":"x"}`,
    normalise: ['decode'],
  },
  {
    name: 'int64 given as a fraction',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","limit":1.5}`,
    normalise: ['decode'],
  },
  {
    name: 'int64 given as a boolean',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","limit":true}`,
    normalise: ['decode'],
  },
  {
    name: 'int64 string with a leading zero',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","limit":"01"}`,
    normalise: ['decode'],
  },
  {
    name: 'int64 out of range',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","revision":"99999999999999999999"}`,
    normalise: ['decode'],
  },
  {
    name: 'bool given as a string',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","serializable":"true"}`,
    normalise: ['decode'],
  },
  {
    name: 'unknown enum name',
    path: '/v3/kv/range',
    body: `{${ALL},"sort_order":"BOGUS"}`,
    normalise: ['decode'],
  },

  // --- deliberate differences --------------------------------------------------------------
  {
    name: 'an unknown field',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","foo":1}`,
    ours: {
      status: 400,
      body: {
        error: 'etcetera: unknown request field: "foo"',
        message: 'etcetera: unknown request field: "foo"',
        code: 3,
      },
      why: 'etcd 3.4 ignores unknown fields; etcetera refuses them so a misspelt field never passes silently',
    },
  },
  {
    name: 'an enum number out of range',
    path: '/v3/kv/range',
    body: `{${ALL},"sort_order":9}`,
    normalise: ['decode'],
    ours: decodeError('etcd accepts any enum number; etcetera only the defined ones'),
  },
  {
    name: 'trailing bytes after the JSON value',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}"} x`,
    normalise: ['decode'],
    ours: decodeError(
      "etcd's streaming decoder stops after the first value; etcetera reads the whole body as JSON",
    ),
  },
  {
    name: 'an int64 in exponent form',
    path: '/v3/kv/range',
    body: `{${ALL},"limit":1e0,"keys_only":true}`,
    normalise: ['decode'],
    ours: {
      status: 200,
      body: {
        header: { revision: '5' },
        kvs: [{ key: 'YQ==', create_revision: '2', mod_revision: '3', version: '2' }],
        more: true,
        count: '3',
      },
      why: 'etcd refuses 1e0 as an int64; JSON.parse reads it as the integer 1, which etcetera accepts',
    },
  },
  {
    name: 'a revision beyond 2^53',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","revision":"9007199254740993"}`,
    normalise: ['decode'],
    ours: decodeError('etcetera keeps int64 fields within ±(2^53-1) instead of losing precision'),
  },

  // --- put refusals ----------------------------------------------------------------------
  { name: 'put with no key', path: '/v3/kv/put', body: `{"value":"${b('1')}"}` },
  {
    name: 'put with a lease that does not exist',
    path: '/v3/kv/put',
    body: `{"key":"${b('a')}","value":"${b('1')}","lease":"123"}`,
  },
  {
    name: 'put ignore_value with a value',
    path: '/v3/kv/put',
    body: `{"key":"${b('a')}","value":"${b('1')}","ignore_value":true}`,
  },
  {
    name: 'put ignore_value on a missing key',
    path: '/v3/kv/put',
    body: `{"key":"${b('zz')}","ignore_value":true}`,
  },
  {
    name: 'put ignore_lease with a lease',
    path: '/v3/kv/put',
    body: `{"key":"${b('a')}","ignore_lease":true,"lease":5}`,
  },
  {
    name: 'put ignore_value keeps the value',
    path: '/v3/kv/put',
    body: `{"key":"${b('a')}","ignore_value":true,"prev_kv":true}`,
  },

  // --- delete ----------------------------------------------------------------------------
  {
    name: 'delete a missing key changes nothing',
    path: '/v3/kv/deleterange',
    body: `{"key":"${b('zz')}"}`,
  },
  {
    name: 'delete b with prev_kv',
    path: '/v3/kv/deleterange',
    body: `{"key":"${b('b')}","prev_kv":true}`,
  },
  {
    name: 'delete the range [c, d)',
    path: '/v3/kv/deleterange',
    body: `{"key":"${b('c')}","range_end":"${b('d')}"}`,
  },
  { name: 'delete with no key', path: '/v3/kv/deleterange', body: '{}' },
  { name: 'put b=1 again', path: '/v3/kv/put', body: `{"key":"${b('b')}","value":"${b('1')}"}` },

  // --- txn -------------------------------------------------------------------------------
  { name: 'an empty txn succeeds', path: '/v3/kv/txn', body: '{}' },
  {
    name: 'txn: compare holds, range/put/delete run in order',
    path: '/v3/kv/txn',
    body: `{"compare":[{"key":"${b('a')}","target":"VALUE","value":"${b('2')}"}],"success":[{"request_range":{"key":"${b('a')}"}},{"request_put":{"key":"${b('c')}","value":"${b('3')}","prev_kv":true}},{"request_delete_range":{"key":"${b('b')}","prev_kv":true}},{"request_range":{"key":"${b('c')}"}}],"failure":[]}`,
  },
  {
    name: 'txn: compare fails, failure path with a nested txn',
    path: '/v3/kv/txn',
    body: `{"compare":[{"key":"${b('a')}","target":"MOD","result":"GREATER","mod_revision":"100"}],"success":[],"failure":[{"request_range":{"key":"${b('a')}","count_only":true}},{"request_txn":{"compare":[],"success":[{"request_range":{"key":"${b('a')}"}}]}}]}`,
  },
  {
    name: 'txn: failed compare and no ops',
    path: '/v3/kv/txn',
    body: `{"compare":[{"key":"${b('a')}","target":"VERSION","version":"0"}],"success":[{"request_put":{"key":"${b('a')}","value":"${b('9')}"}}]}`,
  },
  {
    name: 'txn: compare result by number',
    path: '/v3/kv/txn',
    body: `{"compare":[{"key":"${b('a')}","target":"VALUE","value":"${b('1')}","result":1}]}`,
  },
  {
    name: 'txn: lease compare',
    path: '/v3/kv/txn',
    body: `{"compare":[{"key":"${b('a')}","target":"LEASE","lease":"0"}]}`,
  },
  {
    name: 'txn: compare over a range',
    path: '/v3/kv/txn',
    body: `{"compare":[{"key":"${b('a')}","range_end":"${b('z')}","target":"CREATE","result":"GREATER","create_revision":"0"}]}`,
  },
  {
    name: 'txn: the same key put twice',
    path: '/v3/kv/txn',
    body: `{"success":[{"request_put":{"key":"${b('a')}","value":"${b('1')}"}},{"request_put":{"key":"${b('a')}","value":"${b('1')}"}}]}`,
  },
  {
    name: 'txn: a key put and deleted',
    path: '/v3/kv/txn',
    body: `{"success":[{"request_delete_range":{"key":"${b('a')}","range_end":"${b('b')}"}},{"request_put":{"key":"${b('a')}","value":"${b('1')}"}}]}`,
  },
  {
    name: 'txn: one key put in both branches of a nested txn',
    path: '/v3/kv/txn',
    body: `{"success":[{"request_txn":{"compare":[{"key":"${b('a')}","target":"VERSION","result":"GREATER","version":"0"}],"success":[{"request_put":{"key":"${b('n')}","value":"${b('s')}"}}],"failure":[{"request_put":{"key":"${b('n')}","value":"${b('f')}"}}]}}]}`,
  },
  { name: 'txn: an op with no request', path: '/v3/kv/txn', body: '{"success":[{}]}' },
  {
    name: 'txn: a compare with no key',
    path: '/v3/kv/txn',
    body: `{"compare":[{"target":"VALUE","value":"${b('1')}"}]}`,
  },
  {
    name: 'txn: an unknown compare target',
    path: '/v3/kv/txn',
    body: `{"compare":[{"key":"${b('a')}","target":"BAD"}]}`,
    normalise: ['decode'],
  },
  { name: 'txn: null lists', path: '/v3/kv/txn', body: '{"compare":null,"success":null}' },
  {
    name: 'txn: 129 ops',
    path: '/v3/kv/txn',
    body: () =>
      JSON.stringify({
        success: Array.from({ length: 129 }, (_, i) => ({ request_range: { key: b(`k${i}`) } })),
      }),
  },
  {
    name: 'txn: an op with two requests',
    path: '/v3/kv/txn',
    body: `{"success":[{"request_range":{"key":"${b('a')}"},"request_txn":{}}]}`,
    // etcd picks one of the two in Go's random map order, so only the status is stable.
    normalise: ['statusOnly'],
    ours: {
      status: 400,
      body: null,
      why: 'etcd runs one of the two requests of a malformed op; etcetera refuses the op',
    },
  },

  // --- compaction ------------------------------------------------------------------------
  { name: 'compact to revision 3', path: '/v3/kv/compaction', body: '{"revision":"3"}' },
  { name: 'compact to revision 3 again', path: '/v3/kv/compaction', body: '{"revision":"3"}' },
  { name: 'compact to a future revision', path: '/v3/kv/compaction', body: '{"revision":"1000"}' },
  { name: 'compact with no revision', path: '/v3/kv/compaction', body: '{}' },
  {
    name: 'range below the compacted revision',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","revision":2}`,
  },
  {
    name: 'range at the compacted revision',
    path: '/v3/kv/range',
    body: `{"key":"${b('a')}","revision":3}`,
  },
  {
    name: 'compact physically to revision 4',
    path: '/v3/kv/compaction',
    body: '{"revision":4,"physical":true}',
  },

  // --- leases ----------------------------------------------------------------------------
  { name: 'grant lease 1000', path: '/v3/lease/grant', body: '{"TTL":60,"ID":"1000"}' },
  { name: 'grant lease 1000 again', path: '/v3/lease/grant', body: '{"TTL":60,"ID":1000}' },
  {
    name: 'grant with no TTL gets the minimum',
    path: '/v3/lease/grant',
    body: '{}',
    normalise: ['leaseId'],
    capture: { name: 'lease', path: ['ID'] },
  },
  { name: 'grant a TTL too large', path: '/v3/lease/grant', body: '{"TTL":"9000000001"}' },
  {
    name: 'put l with lease 1000',
    path: '/v3/kv/put',
    body: `{"key":"${b('l')}","value":"${b('v')}","lease":"1000"}`,
  },
  {
    name: 'time to live of lease 1000 with keys',
    path: '/v3/lease/timetolive',
    body: '{"ID":"1000","keys":true}',
    normalise: ['ttl'],
  },
  {
    name: 'time to live on the older path',
    path: '/v3/kv/lease/timetolive',
    body: '{"ID":1000}',
    normalise: ['ttl'],
  },
  { name: 'time to live of a missing lease', path: '/v3/lease/timetolive', body: '{"ID":"1001"}' },
  { name: 'time to live with no ID', path: '/v3/lease/timetolive', body: '{}' },
  { name: 'keepalive lease 1000', path: '/v3/lease/keepalive', body: '{"ID":"1000"}' },
  { name: 'keepalive a missing lease', path: '/v3/lease/keepalive', body: '{"ID":"1001"}' },
  { name: 'keepalive with no ID', path: '/v3/lease/keepalive', body: '{}' },
  {
    name: 'keepalive with malformed JSON',
    path: '/v3/lease/keepalive',
    body: '{bad',
    normalise: ['decode'],
    ours: decodeError(
      'etcd answers a stream request it cannot decode with 500 and code 2; etcetera with 400 and code 3, as every other route',
    ),
  },
  { name: 'list leases', path: '/v3/lease/leases', body: '{}', normalise: ['leaseList'] },
  {
    name: 'list leases on the older path',
    path: '/v3/kv/lease/leases',
    body: '',
    normalise: ['leaseList'],
  },
  { name: 'revoke the granted lease', path: '/v3/lease/revoke', body: '{"ID":"{{lease}}"}' },
  {
    name: 'revoke lease 1000 on the older path (deletes l)',
    path: '/v3/kv/lease/revoke',
    body: '{"ID":"1000"}',
  },
  { name: 'revoke lease 1000 again', path: '/v3/lease/revoke', body: '{"ID":"1000"}' },
  { name: 'revoke with no ID', path: '/v3/lease/revoke', body: '{}' },
  { name: 'l went with its lease', path: '/v3/kv/range', body: `{"key":"${b('l')}"}` },
  {
    name: 'grant with a lowercase ttl field',
    path: '/v3/lease/grant',
    body: '{"ttl":5}',
    normalise: ['leaseId'],
    ours: {
      status: 400,
      body: {
        error: 'etcetera: unknown request field: "ttl"',
        message: 'etcetera: unknown request field: "ttl"',
        code: 3,
      },
      why: 'the field is TTL; etcd ignores the unknown one and grants the minimum TTL',
    },
  },

  {
    name: 'grant with a negative ID',
    path: '/v3/lease/grant',
    body: '{"TTL":5,"ID":"-3"}',
    normalise: ['decode'],
    ours: decodeError(
      "etcetera's lease IDs are 0..2^53-1 (the store's LeaseId); etcd takes any int64",
    ),
  },

  // --- cluster and maintenance ---------------------------------------------------------------
  { name: 'member list', path: '/v3/cluster/member/list', body: '{}', normalise: ['members'] },
  { name: 'member add with no URLs', path: '/v3/cluster/member/add', body: '{}' },
  {
    name: 'member add with a URL without a port',
    path: '/v3/cluster/member/add',
    body: '{"peerURLs":["http://127.0.0.1"]}',
  },
  {
    name: 'member add a learner',
    path: '/v3/cluster/member/add',
    body: '{"peerURLs":["http://127.0.0.1:7"],"isLearner":true}',
    normalise: ['members'],
    capture: { name: 'learner', path: ['member', 'ID'] },
  },
  {
    name: 'member remove the learner',
    path: '/v3/cluster/member/remove',
    body: '{"ID":"{{learner}}"}',
    normalise: ['members'],
  },
  { name: 'member remove an unknown ID', path: '/v3/cluster/member/remove', body: '{"ID":"123"}' },
  { name: 'member promote an unknown ID', path: '/v3/cluster/member/promote', body: '{"ID":123}' },
  {
    name: 'member remove with a bad ID',
    path: '/v3/cluster/member/remove',
    body: '{"ID":"abc"}',
    normalise: ['decode'],
  },
  {
    name: 'status',
    path: '/v3/maintenance/status',
    body: '{}',
    normalise: ['status', 'etcdVersion'],
  },
  { name: 'health', method: 'GET', path: '/health' },
  {
    name: 'version',
    method: 'GET',
    path: '/version',
    normalise: ['etcdVersion'],
    ours: {
      status: 200,
      body: {
        major: '1',
        minor: '32',
        gitVersion: 'v1.32.0',
        gitCommit: '0000000000000000000000000000000000000000',
        gitTreeState: 'clean',
        buildDate: '2025-01-01T00:00:00Z',
        goVersion: 'go1.23.4',
        compiler: 'gc',
        platform: 'linux/amd64',
        etcdserver: '3.4.<patch>',
        etcdcluster: '3.4.0',
      },
      why: 'one /version serves etcd clients and kubectl: the Kubernetes fields are merged in',
    },
  },

  // --- size limits and routing ------------------------------------------------------------
  { name: 'a put over --max-request-bytes', path: '/v3/kv/put', body: bigValue(1600) },
  { name: 'a put just under --max-request-bytes', path: '/v3/kv/put', body: bigValue(1530) },
  {
    name: 'a body far over the limit',
    path: '/v3/kv/put',
    body: bigValue(3072),
    normalise: ['decode'],
    ours: {
      status: 400,
      body: {
        error: 'etcdserver: request is too large',
        message: 'etcdserver: request is too large',
        code: 3,
      },
      why: "etcd's gRPC server refuses it as ResourceExhausted (429); etcetera stops reading and answers request too large",
    },
  },
  {
    name: 'range after the big put',
    path: '/v3/kv/range',
    body: `{"key":"${b('big')}","keys_only":true}`,
  },
  { name: 'an unknown path', path: '/v3/nope', body: '{}', normalise: ['statusOnly'] },
  { name: 'GET on a POST route', method: 'GET', path: '/v3/kv/range', normalise: ['statusOnly'] },
  { name: 'POST on /health', path: '/health', body: '{}', normalise: ['statusOnly'] },
  { name: 'range every key at the end', path: '/v3/kv/range', body: `{${ALL},"keys_only":true}` },
];
