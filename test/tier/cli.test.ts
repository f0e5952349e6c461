/**
 * `etcetera proxy` as a user runs it: bad flags are refused with a message naming the flag
 * and nothing listening; a running proxy in front of a member (in this process) serves
 * etcd's API on its --listen-client-urls, names its --advertise-client-urls in member lists,
 * creates its --data-dir, and stops on SIGTERM with exit 0.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { Client, text } from '../../src/client/index.js';
import { isEtceteraError } from '../../src/errors.js';
import { parseProxyArgs } from '../../src/tier/proxy.js';
import { startMember } from '../api/servers.js';
import { freePorts, waitFor } from '../server/helpers.js';
import { compileCli } from '../server/procs/compile.js';

function run(cli: string, args: string[]) {
  const child = spawn(process.execPath, [cli, 'proxy', ...args]);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  return { child, exited, out: () => stdout, err: () => stderr };
}

// Child processes are slow to start on a loaded machine: a generous timeout, no fixed waits.
t.test('etcetera proxy', { timeout: 180_000 }, async (t) => {
  const cli = await compileCli();
  const upstream = await startMember(join(t.testdir(), 'm'));
  t.teardown(() => upstream.close());

  await t.test('bad flags are refused', async (t) => {
    const none = run(cli, ['--listen-client-urls', 'http://127.0.0.1:0']);
    t.equal(await none.exited, 1);
    t.match(none.err(), /--endpoints is required/);
    // The rest in this process: the same parser the command runs.
    const refusal = (args: string[]) => {
      try {
        parseProxyArgs(args);
        return 'accepted';
      } catch (e) {
        return isEtceteraError(e, 'ERR_INVALID_ARGUMENT') ? e.message : String(e);
      }
    };
    t.match(
      refusal(['--endpoints', upstream.url, '--listen-client-urls', 'ftp://x:1']),
      /--listen-client-urls: ftp:\/\/x:1 must be http:\/\/ or https:\/\//,
    );
    t.match(refusal(['--endpoints', 'not a url']), /--endpoints: not a url is not a URL/);
    t.match(refusal(['--endpoints', upstream.url, '--bogus']), /bogus/);
    t.match(refusal(['--endpoints', upstream.url, '--log-level', 'loud']), /--log-level: loud/);
    t.match(
      refusal(['--endpoints', upstream.url, '--listen-client-urls', 'https://127.0.0.1:1']),
      /plain http only/,
    );
  });

  await t.test('serves, advertises, stops on SIGTERM', async (t) => {
    const [port] = await freePorts(1);
    const listen = `http://127.0.0.1:${port}`;
    const advertised = `http://localhost:${port}`;
    const dataDir = join(t.testdir(), 'proxy-data');
    const p = run(cli, [
      '--endpoints',
      upstream.url,
      '--listen-client-urls',
      listen,
      '--advertise-client-urls',
      advertised,
      '--data-dir',
      dataDir,
      '--log-level',
      'warn',
    ]);
    t.teardown(() => void p.child.kill('SIGKILL'));
    const healthy = async () => {
      try {
        return (await fetch(`${listen}/health`)).status === 200;
      } catch {
        return false;
      }
    };
    await waitFor('the proxy serves', healthy, 20_000, 50);
    const client = new Client({ endpoints: [listen] });
    await client.put('cli/k', 'v');
    t.equal(text((await client.get('cli/k')).kvs[0]!.value), 'v');
    const { members } = await client.memberList();
    t.same(
      members.map((m) => m.clientURLs),
      [[advertised]],
    );
    client.close();
    t.ok(existsSync(dataDir), '--data-dir is created');
    p.child.kill('SIGTERM');
    t.equal(await p.exited, 0, p.err());
  });
});
