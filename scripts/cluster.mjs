#!/usr/bin/env node
/**
 * `npm run cluster`: three members on 127.0.0.1, as etcd's Procfile runs them.
 *
 *   infra1  clients http://127.0.0.1:2379   peers http://127.0.0.1:2380
 *   infra2  clients http://127.0.0.1:22379  peers http://127.0.0.1:22380
 *   infra3  clients http://127.0.0.1:32379  peers http://127.0.0.1:32380
 *
 * Data lives in ./cluster-data/<name> (delete it to start over; a restart reuses it and
 * needs no cluster flags, though passing them again is harmless). Each member's log lines
 * are printed with its name in front. Ctrl-C stops all three gracefully.
 *
 * Runs the compiled CLI (dist/cli.js) and builds it first when any file under src/ is newer.
 * ETCETERA_LOG_LEVEL (default info) is passed on.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const CLI = join('dist', 'cli.js');
const MEMBERS = [
  { name: 'infra1', client: 2379, peer: 2380 },
  { name: 'infra2', client: 22379, peer: 22380 },
  { name: 'infra3', client: 32379, peer: 32380 },
];
const COLORS = [36, 33, 35];
const tty = process.stdout.isTTY;

function newestSource(dir) {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestSource(p) : statSync(p).mtimeMs);
  }
  return newest;
}

function build() {
  if (existsSync(CLI) && statSync(CLI).mtimeMs >= newestSource('src')) return;
  console.log('cluster: building dist/ (tsc -p tsconfig.build.json)...');
  const tsc = join('node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  if (!existsSync(CLI)) process.exit(r.status ?? 1);
  if (r.status !== 0) console.log('cluster: tsc reported errors; running what it emitted');
}

/** One pino JSON line as "HH:MM:SS.mmm LEVEL msg key=value ...". */
function format(line) {
  let o;
  try {
    o = JSON.parse(line);
  } catch {
    return line;
  }
  const { level, time, msg, member: _m, pid: _p, hostname: _h, ...rest } = o;
  const names = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
  const fields = Object.entries(rest).map(
    ([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`,
  );
  return [String(time ?? '').slice(11, 23), (names[level] ?? level).padEnd(5), msg, ...fields].join(
    ' ',
  );
}

function start(m, i, initialCluster) {
  const url = (port) => `http://127.0.0.1:${port}`;
  const args = [
    CLI,
    'serve',
    '--name',
    m.name,
    '--data-dir',
    join('cluster-data', m.name),
    '--listen-client-urls',
    url(m.client),
    '--advertise-client-urls',
    url(m.client),
    '--listen-peer-urls',
    url(m.peer),
    '--initial-advertise-peer-urls',
    url(m.peer),
    '--initial-cluster',
    initialCluster,
    '--initial-cluster-token',
    'etcetera-cluster-1',
    '--initial-cluster-state',
    'new',
    '--log-level',
    process.env.ETCETERA_LOG_LEVEL ?? 'info',
  ];
  // Own process group: Ctrl-C reaches only this script, which stops the members in order.
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const prefix = tty ? `\x1b[${COLORS[i]}m${m.name.padEnd(6)}|\x1b[0m ` : `${m.name.padEnd(6)}| `;
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (l) => console.log(prefix + format(l)));
  }
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      console.log(`${prefix}exited (${signal ?? `code ${code}`})`);
      resolve();
    }),
  );
  return { child, exited };
}

build();
const initialCluster = MEMBERS.map((m) => `${m.name}=http://127.0.0.1:${m.peer}`).join(',');
const running = MEMBERS.map((m, i) => start(m, i, initialCluster));
console.log(
  `cluster: clients on ${MEMBERS.map((m) => `127.0.0.1:${m.client}`).join(', ')}; Ctrl-C stops all`,
);

let stopping = false;
const stop = async () => {
  if (stopping) {
    for (const r of running) r.child.kill('SIGKILL');
    return;
  }
  stopping = true;
  console.log('cluster: stopping (Ctrl-C again to kill)');
  for (const r of running) r.child.kill('SIGTERM');
  await Promise.all(running.map((r) => r.exited));
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
