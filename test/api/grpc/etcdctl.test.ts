/**
 * The real etcdctl 3.4 against etcetera's gRPC API on the shared client port: a member in this
 * process on 127.0.0.1, etcdctl as a child process. Skipped, with the reason printed, when
 * etcdctl is not installed.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Member } from '../../../src/server/member.js';
import { startSingle } from '../../server/helpers.js';
import { LocalCluster } from '../../server/local-cluster.js';

const ETCDCTL = '/usr/bin/etcdctl';
const have = existsSync(ETCDCTL);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** etcdctl with host:port endpoints (etcdctl 3.4 dials maintenance calls with the raw endpoint). */
function ctl(endpoint: string, args: string[], stdin?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      ETCDCTL,
      [`--endpoints=${endpoint}`, '--command-timeout=10s', ...args],
      { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 30_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    if (stdin !== undefined) child.stdin!.end(stdin);
  });
}

const hostPort = (m: Member) => m.clientUrls[0]!.host;

async function ok(endpoint: string, args: string[], stdin?: string): Promise<string> {
  const r = await ctl(endpoint, args, stdin);
  if (r.code !== 0) throw new Error(`etcdctl ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

t.test(
  'etcdctl against one member',
  { skip: have ? false : `${ETCDCTL} not installed` },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'grpc-etcdctl-'));
    const m = await startSingle(dir);
    t.teardown(() => m.stop());
    const ep = hostPort(m);

    t.test('put, get and its flags, del', async (t) => {
      t.equal(await ok(ep, ['put', 'greeting', 'hello']), 'OK\n');
      t.equal(await ok(ep, ['get', 'greeting']), 'greeting\nhello\n');
      await ok(ep, ['put', 'greeting', 'hi']);
      await ok(ep, ['put', 'grass', 'green']);
      await ok(ep, ['put', 'other', 'x']);
      t.equal(await ok(ep, ['get', '--prefix', 'gr', '--keys-only']), 'grass\n\ngreeting\n\n');
      t.equal(await ok(ep, ['get', '--prefix', 'gr', '--print-value-only']), 'green\nhi\n');
      t.equal(await ok(ep, ['get', '--prefix', 'gr', '--limit=1']), 'grass\ngreen\n');
      const rev = JSON.parse(await ok(ep, ['get', 'greeting', '-w', 'json']));
      t.equal(rev.kvs[0].version, 2);
      t.equal(Buffer.from(rev.kvs[0].value, 'base64').toString(), 'hi');
      t.equal(rev.count, 1);
      const first = rev.kvs[0].create_revision as number;
      t.equal(await ok(ep, ['get', 'greeting', `--rev=${first}`]), 'greeting\nhello\n');
      t.equal(await ok(ep, ['del', 'other']), '1\n');
      t.equal(await ok(ep, ['get', 'other']), '');
    });

    t.test('txn in interactive syntax', async (t) => {
      const out = await ok(
        ep,
        ['txn', '-i'],
        'value("greeting") = "hi"\n\nput greeting bye\n\nput greeting never\n\n',
      );
      t.match(out, /\nSUCCESS\n\nOK\n$/);
      t.equal(await ok(ep, ['get', 'greeting', '--print-value-only']), 'bye\n');
    });

    t.test('watch: prefix, from a revision, ended after a put', async (t) => {
      const rev = JSON.parse(await ok(ep, ['get', 'greeting', '-w', 'json'])).header.revision;
      // From a past revision: the history replays (the txn's put of "bye" is at `rev`).
      const child = spawn(
        ETCDCTL,
        [`--endpoints=${ep}`, 'watch', '--prefix', 'gre', `--rev=${rev}`],
        {
          env: { ...process.env, ETCDCTL_API: '3' },
        },
      );
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      const seen = (s: string) =>
        new Promise<void>((resolve, reject) => {
          const deadline = setTimeout(
            () => reject(new Error(`watch output lacks ${s}: ${out}`)),
            15_000,
          );
          const check = () => {
            if (out.includes(s)) {
              clearTimeout(deadline);
              child.stdout.off('data', check);
              resolve();
            }
          };
          child.stdout.on('data', check);
          check();
        });
      await seen('PUT\ngreeting\nbye\n');
      await ok(ep, ['put', 'greenery', 'leaf']);
      await seen('PUT\ngreenery\nleaf\n');
      await ok(ep, ['put', 'unrelated', 'z']);
      await ok(ep, ['del', 'greenery']);
      await seen('DELETE\ngreenery\n');
      const closed = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
      child.kill('SIGINT');
      await closed;
      t.notOk(out.includes('unrelated'), 'a key outside the prefix is not watched');
    });

    t.test('leases: grant, keep-alive --once, timetolive --keys, revoke', async (t) => {
      const grant = await ok(ep, ['lease', 'grant', '60']);
      const id = /lease ([0-9a-f]+) granted with TTL\(60s\)/.exec(grant)?.[1];
      t.ok(id, grant);
      await ok(ep, ['put', '--lease', id!, 'leased', 'v']);
      t.match(
        await ok(ep, ['lease', 'keep-alive', '--once', id!]),
        new RegExp(`lease ${id} keepalived with TTL\\(\\d+\\)`),
      );
      const ttl = await ok(ep, ['lease', 'timetolive', '--keys', id!]);
      t.match(
        ttl,
        new RegExp(
          `lease ${id} granted with TTL\\(60s\\), remaining\\(\\d+s\\), attached keys\\(\\[leased\\]\\)`,
        ),
      );
      t.match(await ok(ep, ['lease', 'list']), id!);
      t.equal(await ok(ep, ['lease', 'revoke', id!]), `lease ${id} revoked\n`);
      t.equal(await ok(ep, ['get', 'leased']), '', 'revoking the lease deleted its key');
    });

    t.test('compaction, and a read below it refused as etcd does', async (t) => {
      const rev = JSON.parse(await ok(ep, ['get', 'greeting', '-w', 'json'])).header.revision;
      t.equal(await ok(ep, ['compaction', String(rev)]), `compacted revision ${rev}\n`);
      const r = await ctl(ep, ['get', 'greeting', '--rev=2']);
      t.not(r.code, 0);
      t.match(r.stderr, 'etcdserver: mvcc: required revision has been compacted');
    });

    t.test('member list, add, update, remove', async (t) => {
      t.match(
        await ok(ep, ['member', 'list']),
        /^[0-9a-f]+, started, m1, http:\/\/127\.0\.0\.1:1, http:\/\/127\.0\.0\.1:\d+, false\n$/,
      );
      const add = await ok(ep, [
        'member',
        'add',
        'm9',
        '--learner',
        '--peer-urls=http://127.0.0.1:9',
      ]);
      const id = /Member\s+([0-9a-f]+) added to cluster/.exec(add)?.[1];
      t.ok(id, add);
      t.match(
        await ok(ep, ['member', 'list']),
        new RegExp(`${id}, unstarted, , http://127.0.0.1:9, , true`),
      );
      t.match(
        await ok(ep, ['member', 'update', id!, '--peer-urls=http://127.0.0.1:10']),
        new RegExp(`^Member\\s+${id} updated in cluster\\s+[0-9a-f]+\\n$`),
      );
      t.match(
        await ok(ep, ['member', 'list']),
        new RegExp(`${id}, unstarted, , http://127.0.0.1:10, , true`),
      );
      const json = JSON.parse(
        await ok(ep, ['member', 'update', id!, '--peer-urls=http://127.0.0.1:11', '-w', 'json']),
      );
      // IDs are 64-bit: JSON.parse rounds them, so find the member by its new URL.
      t.ok(
        json.members.some(
          (x: { peerURLs?: string[] }) => x.peerURLs?.join() === 'http://127.0.0.1:11',
        ),
        'the json answer lists the new URL',
      );
      t.ok(json.header.cluster_id, 'with the header');
      const refused = await ctl(ep, ['member', 'update', 'abc', '--peer-urls=http://127.0.0.1:12']);
      t.not(refused.code, 0);
      t.match(refused.stderr, 'etcdserver: member not found');
      t.match(
        await ok(ep, ['member', 'remove', id!]),
        new RegExp(`Member\\s+${id} removed from cluster`),
      );
      t.notMatch(await ok(ep, ['member', 'list']), id!);
    });

    t.test('endpoint status, health, hashkv; defrag; alarm list', async (t) => {
      const status = JSON.parse(await ok(ep, ['endpoint', 'status', '-w', 'json']))[0].Status;
      t.equal(status.version, '3.4.34');
      t.equal(status.leader, status.header.member_id);
      t.ok(status.raftIndex > 0 && status.raftAppliedIndex > 0 && status.dbSize > 0);
      const health = await ctl(ep, ['endpoint', 'health']);
      t.equal(health.code, 0);
      // etcdctl 3.4 prints the health line on stderr.
      t.match(health.stdout + health.stderr, `${ep} is healthy: successfully committed proposal`);
      const h1 = JSON.parse(await ok(ep, ['endpoint', 'hashkv', '-w', 'json']))[0].HashKV;
      const h2 = JSON.parse(await ok(ep, ['endpoint', 'hashkv', '-w', 'json']))[0].HashKV;
      t.equal(h1.hash, h2.hash, 'the same keyspace hashes the same');
      t.ok(h1.hash > 0);
      await ok(ep, ['put', 'greeting', 'changed']);
      const h3 = JSON.parse(await ok(ep, ['endpoint', 'hashkv', '-w', 'json']))[0].HashKV;
      t.not(h3.hash, h1.hash, 'a write changes the hash');
      t.equal(await ok(ep, ['defrag']), `Finished defragmenting etcd member[${ep}]\n`);
      t.equal(await ok(ep, ['alarm', 'list']), '');
      t.equal(await ok(ep, ['alarm', 'disarm']), '');
    });

    t.test('snapshot save: the file ends with the SHA-256 of the rest', async (t) => {
      const file = join(dir, 'snap.db');
      const out = await ctl(ep, ['snapshot', 'save', file]);
      t.equal(out.code, 0, out.stderr);
      t.match(out.stdout, `Snapshot saved at ${file}`);
      const b = readFileSync(file);
      t.equal(b.length % 512, 32, 'a 512-byte multiple and the digest');
      const digest = createHash('sha256')
        .update(b.subarray(0, b.length - 32))
        .digest();
      t.ok(digest.equals(b.subarray(b.length - 32)), 'the trailer is the SHA-256 of the blob');
      t.ok(b.includes(Buffer.from('greeting')), 'the blob holds the store');
    });
  },
);

t.test(
  'etcdctl with http:// endpoints: maintenance commands too',
  { skip: have ? false : `${ETCDCTL} not installed` },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'grpc-etcdctl-url-'));
    const m = await startSingle(dir);
    t.teardown(() => m.stop());
    // etcdctl 3.4 sends this whole URL as the HTTP/2 :authority of maintenance calls.
    const ep = `http://${hostPort(m)}`;
    t.equal(await ok(ep, ['put', 'greeting', 'hello']), 'OK\n');
    const status = JSON.parse(await ok(ep, ['endpoint', 'status', '-w', 'json']))[0];
    t.equal(status.Endpoint, ep);
    t.equal(status.Status.version, '3.4.34');
    t.match(await ok(ep, ['endpoint', 'status']), new RegExp(`^${ep}, [0-9a-f]+, 3\\.4\\.34, `));
    const hash = JSON.parse(await ok(ep, ['endpoint', 'hashkv', '-w', 'json']))[0];
    t.ok(hash.HashKV.hash > 0, 'hashkv answered');
    t.equal(await ok(ep, ['defrag']), `Finished defragmenting etcd member[${ep}]\n`);
    t.equal(await ok(ep, ['alarm', 'list']), '');
    const file = join(dir, 'snap.db');
    const snap = await ctl(ep, ['snapshot', 'save', file]);
    t.equal(snap.code, 0, snap.stderr);
    t.match(snap.stdout, `Snapshot saved at ${file}`);
    t.ok(readFileSync(file).includes(Buffer.from('greeting')), 'the snapshot holds the store');
    t.equal(await ok(ep, ['get', 'greeting', '--print-value-only']), 'hello\n');
  },
);

t.test(
  'etcdctl put/get through a follower of a three-member cluster',
  { skip: have ? false : `${ETCDCTL} not installed` },
  async (t) => {
    const c = await LocalCluster.start(mkdtempSync(join(tmpdir(), 'grpc-etcdctl-3-')), [
      'a',
      'b',
      'c',
    ]);
    t.teardown(() => c.close());
    const leader = await c.waitLeader();
    const follower = [...c.nodes.values()].map((n) => n.member!).find((m) => m !== leader)!;
    const ep = hostPort(follower);
    t.equal(await ok(ep, ['put', 'k', 'via-follower']), 'OK\n');
    t.equal(await ok(ep, ['get', 'k', '--print-value-only']), 'via-follower\n');
    t.equal(await ok(hostPort(leader), ['get', 'k', '--print-value-only']), 'via-follower\n');
    const list = await ok(ep, ['member', 'list']);
    t.equal(list.trim().split('\n').length, 3);
  },
);
