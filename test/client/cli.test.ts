/**
 * The client CLI against the API over the store double: etcdctl's output for each command
 * in simple, json and table form, its txn syntax on stdin, and its exit codes.
 */
import t, { type Test } from 'tap';
import { runClientCommand } from '../../src/cli/client.js';
import { freePort, startDouble } from '../api/servers.js';

async function setup(t: Test) {
  const target = await startDouble(t.testdir());
  t.teardown(() => target.close());
  const run = async (args: string[], stdin = '', signal?: AbortSignal) => {
    let out = '';
    let err = '';
    const code = await runClientCommand(
      [`--endpoints=${target.url}`, '--transport=json', ...args],
      {
        stdout: (s) => {
          out += s;
        },
        stderr: (s) => {
          err += s;
        },
        readStdin: async () => stdin,
        signal,
      },
    );
    return { code, out, err };
  };
  return { run, target };
}

t.test('put, get, del in simple form', async (t) => {
  const { run } = await setup(t);
  t.same(await run(['put', 'foo', 'bar']), { code: 0, out: 'OK\n', err: '' });
  t.same((await run(['put', 'foo', 'baz', '--prev-kv'])).out, 'OK\nfoo\nbar\n');
  t.same((await run(['put', 'from-stdin'], 'piped value\n')).out, 'OK\n');
  t.same((await run(['get', 'foo'])).out, 'foo\nbaz\n');
  t.same((await run(['get', 'from-stdin', '--print-value-only'])).out, 'piped value\n');
  t.same((await run(['get', 'f', '--prefix', '--keys-only'])).out, 'foo\n\nfrom-stdin\n\n');
  t.same((await run(['get', 'a', 'g', '--limit', '1'])).out, 'foo\nbaz\n', 'a range with a limit');
  t.same(
    (await run(['get', 'f', '--from-key', '--sort-by=KEY', '--order=DESCEND'])).out,
    'from-stdin\npiped value\nfoo\nbaz\n',
  );
  t.same((await run(['get', 'foo', '--rev=2'])).out, 'foo\nbar\n');
  t.same((await run(['get', 'nothing'])).out, '', 'a missing key prints nothing');
  t.same((await run(['del', 'nothing'])).out, '0\n');
  t.same(
    (await run(['del', 'f', '--prefix', '--prev-kv'])).out,
    '2\nfoo\nbaz\nfrom-stdin\npiped value\n',
  );
});

t.test('json form: etcdctl prints 64-bit numbers as numbers', async (t) => {
  const { run } = await setup(t);
  await run(['put', 'k', 'v']);
  const { out } = await run(['get', 'k', '-w', 'json']);
  t.match(
    out,
    /^\{"header":\{"cluster_id":14841639068965178418,"member_id":10276657743932975437,"revision":2,"raft_term":2\}/,
  );
  t.match(
    out,
    /"kvs":\[\{"key":"aw==","create_revision":2,"mod_revision":2,"version":1,"value":"dg=="\}\],"count":1\}\n$/,
  );
  t.match((await run(['put', 'k', 'w', '-w=json'])).out, /^\{"header":\{.*"revision":3/);
  t.match((await run(['del', 'k', '-w', 'json'])).out, /"deleted":1\}\n$/);
});

t.test('txn from stdin in etcdctl’s syntax', async (t) => {
  const { run } = await setup(t);
  await run(['put', 'k1', 'v1']);
  const script = 'value("k1") = "v1"\nmod("k1") > "1"\n\nput k2 "two words"\nget k1\n\ndel k1\n';
  t.same(await run(['txn'], script), { code: 0, out: 'SUCCESS\n\nOK\n\nk1\nv1\n', err: '' });
  t.same((await run(['get', 'k2'])).out, 'k2\ntwo words\n');
  const failing = 'ver("k1") = "5"\n\nput x 1\n\ndel k2\n';
  t.same((await run(['txn'], failing)).out, 'FAILURE\n\n1\n');
  const bad = await run(['txn'], 'size("k1") = "1"\n');
  t.equal(bad.code, 128);
  t.match(bad.err, 'malformed comparison');
});

t.test('leases: hex IDs as etcdctl prints them', async (t) => {
  const { run } = await setup(t);
  const grant = await run(['lease', 'grant', '60']);
  const id = /^lease ([0-9a-f]{16}) granted with TTL\(60s\)\n$/.exec(grant.out)?.[1];
  t.ok(id, grant.out);
  t.same((await run(['put', 'l', 'v', `--lease=${id}`])).out, 'OK\n');
  t.match(
    (await run(['lease', 'timetolive', id as string, '--keys'])).out,
    new RegExp(
      `^lease ${id} granted with TTL\\(60s\\), remaining\\(\\d+s\\), attached keys\\(\\[l\\]\\)\\n$`,
    ),
  );
  t.same((await run(['lease', 'list'])).out, `found 1 leases\n${id}\n`);
  t.same(
    (await run(['lease', 'keep-alive', '--once', id as string])).out,
    `lease ${id} keepalived with TTL(60)\n`,
  );
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 200);
  const kept = await run(['lease', 'keep-alive', id as string], '', ac.signal);
  t.match(
    kept.out,
    new RegExp(`^lease ${id} keepalived with TTL\\(60\\)\\n`),
    'keep-alive renews until stopped',
  );
  t.same((await run(['lease', 'revoke', id as string])).out, `lease ${id} revoked\n`);
  t.same((await run(['lease', 'timetolive', id as string])).out, `lease ${id} already expired\n`);
  const again = await run(['lease', 'revoke', id as string]);
  t.same(again, {
    code: 1,
    out: '',
    err: 'Error: failed to revoke lease (etcdserver: requested lease not found)\n',
  });
  t.match(
    (await run(['lease', 'grant', '30', '-w', 'json'])).out,
    /^\{"cluster_id":\d+,"member_id":\d+,"revision":\d+,"raft_term":2,"ID":\d+,"TTL":30,"Error":""\}\n$/,
  );
});

t.test('watch prints events until stopped', async (t) => {
  const { run } = await setup(t);
  const ac = new AbortController();
  // From revision 2 (the first write), so no event is missed however late the watch starts.
  const watching = run(['watch', 'w', '--prefix', '--prev-kv', '--rev=2'], '', ac.signal);
  await run(['put', 'w1', 'a']);
  await run(['put', 'w1', 'b']);
  await run(['del', 'w1']);
  await new Promise((r) => setTimeout(r, 500));
  ac.abort();
  const done = await watching;
  t.equal(done.code, 0);
  t.equal(done.out, 'PUT\nw1\na\nPUT\nw1\na\nw1\nb\nDELETE\nw1\nb\nw1\n\n');
});

t.test('compact, member list, endpoint status and health', async (t) => {
  const { run, target } = await setup(t);
  await run(['put', 'a', '1']);
  await run(['put', 'a', '2']);
  t.same((await run(['compact', '2'])).out, 'compacted revision 2\n');
  const again = await run(['compact', '2']);
  t.same(again, {
    code: 1,
    out: '',
    err: 'Error: etcdserver: mvcc: required revision has been compacted\n',
  });
  t.same(
    (await run(['member', 'list'])).out,
    '8e9e05c52164694d, started, default, http://127.0.0.1:2380, http://127.0.0.1:2379, false\n',
  );
  const table = (await run(['member', 'list', '-w', 'table'])).out.split('\n');
  t.same(
    table[1],
    '|        ID        | STATUS  |  NAME   |      PEER ADDRS       |     CLIENT ADDRS      | IS LEARNER |',
  );
  t.same(
    table[3],
    '| 8e9e05c52164694d | started | default | http://127.0.0.1:2380 | http://127.0.0.1:2379 |      false |',
  );
  t.same(
    (await run(['endpoint', 'status'])).out,
    `${target.url}, 8e9e05c52164694d, 3.4.23, 20 kB, true, false, 2, 4, 4, \n`,
  );
  t.match(
    (await run(['endpoint', 'status', '-w', 'json'])).out,
    /^\[\{"Endpoint":"http:\/\/127\.0\.0\.1:\d+","Status":\{"header":/,
  );
  t.match(
    (await run(['endpoint', 'health'])).out,
    `${target.url} is healthy: successfully committed proposal: took = `,
  );
});

t.test('usage and connection errors', async (t) => {
  const { run } = await setup(t);
  t.match(await run(['frobnicate']), { code: 128, err: /unknown command "frobnicate"/ });
  t.match(await run(['get']), { code: 128, err: /get command needs one argument as key/ });
  t.match(await run(['get', 'k', '-w', 'yaml']), {
    code: 128,
    err: /unsupported output format yaml/,
  });
  t.match(await run(['get', 'k', '--limit', 'many']), { code: 128, err: /not an integer/ });
  const dead = await runClientCommand(
    ['get', 'k', `--endpoints=http://127.0.0.1:${await freePort()}`],
    {
      stdout: () => undefined,
      stderr: () => undefined,
      readStdin: async () => '',
    },
  );
  t.equal(dead, 2, 'no server: exit 2');
});
