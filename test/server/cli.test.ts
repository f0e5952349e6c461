/**
 * The `etcetera` command as a user runs it: `serve` configured through ETCETERA_* variables
 * only, the client commands against it, a bad flag, SIGTERM (graceful, exit 0), and a
 * restart that keeps the data.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { freePorts, waitFor } from './helpers.js';
import { compileCli } from './procs/compile.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cli: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

t.test('serve from environment variables, use it, stop it, restart it', async (t) => {
  const cli = await compileCli();
  const [client, peer] = await freePorts(2);
  const env = {
    ETCETERA_NAME: 'solo',
    ETCETERA_DATA_DIR: join(t.testdir(), 'data'),
    ETCETERA_LISTEN_CLIENT_URLS: `http://127.0.0.1:${client}`,
    ETCETERA_LISTEN_PEER_URLS: `http://127.0.0.1:${peer}`,
    ETCETERA_ELECTION_TIMEOUT: '500',
    ETCETERA_HEARTBEAT_INTERVAL: '50',
  };
  const endpoints = { ETCETERA_ENDPOINTS: `127.0.0.1:${client}` };
  const serve = () => {
    const child = spawn(process.execPath, [cli, 'serve'], { env: { ...process.env, ...env } });
    const lines: string[] = [];
    child.stdout.on('data', (b: Buffer) => lines.push(...b.toString().split('\n').filter(Boolean)));
    // 'close', not 'exit': every line the child wrote has been read by then.
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    return { child, lines, exited };
  };
  const health = async () => {
    try {
      return (await fetch(`http://127.0.0.1:${client}/health`)).status === 200;
    } catch {
      return false;
    }
  };

  const first = serve();
  t.teardown(() => void first.child.kill('SIGKILL'));
  // Healthy, and its start line read: the log line may arrive after /health answers.
  const startedLine = (lines: string[]) => lines.find((l) => l.includes('"member started"'));
  await waitFor(
    'the member to be healthy',
    async () => (await health()) && !!startedLine(first.lines),
    20_000,
    50,
  );
  const started = JSON.parse(startedLine(first.lines)!);
  t.equal(started.member, 'solo', 'the name came from ETCETERA_NAME');
  t.equal(started.how, 'new');

  const put = await run(cli, ['put', 'greeting', 'hello'], endpoints);
  t.equal(put.code, 0, put.stderr);
  t.equal(put.stdout.trim(), 'OK');
  const get = await run(cli, ['get', 'greeting'], endpoints);
  t.equal(get.stdout, 'greeting\nhello\n');

  first.child.kill('SIGTERM');
  t.equal(await first.exited, 0, 'SIGTERM: graceful stop, exit 0');
  t.ok(first.lines.some((l) => l.includes('"stopped"')));

  const second = serve();
  t.teardown(() => void second.child.kill('SIGKILL'));
  await waitFor(
    'the restarted member to be healthy',
    async () => (await health()) && !!startedLine(second.lines),
    20_000,
    50,
  );
  const again = await run(cli, ['get', 'greeting'], endpoints);
  t.equal(again.stdout, 'greeting\nhello\n', 'the data survived the restart');
  t.ok(second.lines.some((l) => l.includes('"how":"restart"')));
  second.child.kill('SIGTERM');
  t.equal(await second.exited, 0);
});

t.test('bad flags and unknown commands fail with a message', async (t) => {
  const cli = await compileCli();
  const bad = await run(cli, ['serve', '--no-such-flag']);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /no-such-flag/);
  const unknown = await run(cli, ['frobnicate']);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /unknown command "frobnicate"/);
  const version = await run(cli, ['version']);
  t.match(version.stdout, /API Version: 3\.4/);
  const help = await run(cli, ['serve', '--help']);
  t.match(help.stdout, /--initial-cluster-state/);
});
