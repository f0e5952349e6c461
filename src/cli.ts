#!/usr/bin/env node
/**
 * The `etcetera` command. `etcetera serve [flags]` (or `etcetera [flags]`) runs one member
 * with etcd's flags; `etcetera version` prints the version; `etcetera certs` writes a CA and
 * certificates for a local TLS cluster (src/cli/certs.ts); `etcetera proxy` runs the API tier
 * in front of an etcetera or etcd cluster (src/tier/proxy.ts); get, put, del, txn, watch, lease,
 * compact, member and endpoint are the client commands (src/cli/client.ts, loaded only for
 * them so that serving starts without the client's modules).
 *
 * With --workers N the member forks N worker processes that run this same module
 * (src/server/worker.ts).
 *
 * Signals: SIGTERM or SIGINT stops the member gracefully (a leader hands over first) and
 * exits 0; a second signal exits at once. A member removed from its cluster stops and exits 0.
 */
import cluster from 'node:cluster';
import { isEtceteraError } from './errors.js';
import { resolveConfig } from './server/config.js';
import { parseServeArgs, SERVE_USAGE } from './server/flags.js';
import { ETCD_VERSION, ETCETERA_VERSION } from './server/version.js';

async function serve(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(SERVE_USAGE);
    return;
  }
  const config = resolveConfig(parseServeArgs(args));
  const { Member } = await import('./server/member.js');
  const member = await Member.start(config);
  const { controlPlaneEnabled, startForMember } = await import('./controlplane/serve.js');
  const controlPlane = controlPlaneEnabled(config) ? await startForMember(member) : undefined;
  let exiting = false;
  const shutdown = (code: number, why: string) => {
    if (exiting) {
      process.exit(code);
    }
    exiting = true;
    member.logger.info({ why }, 'shutting down');
    Promise.resolve(controlPlane?.stop())
      .catch(() => undefined)
      .then(() => member.stop())
      .then(
        () => process.exit(code),
        (e: unknown) => {
          member.logger.error({ err: String(e) }, 'stop failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => shutdown(0, 'SIGTERM'));
  process.on('SIGINT', () => shutdown(0, 'SIGINT'));
  member.on('removed', () => shutdown(0, 'removed from the cluster'));
  member.on('error', () => shutdown(1, 'raft failed'));
}

async function proxy(args: string[]): Promise<void> {
  const { PROXY_USAGE, parseProxyArgs, startProxy } = await import('./tier/proxy.js');
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(PROXY_USAGE);
    return;
  }
  const p = await startProxy(parseProxyArgs(args));
  let exiting = false;
  const shutdown = (why: string) => {
    if (exiting) process.exit(0);
    exiting = true;
    p.logger.info({ why }, 'shutting down');
    p.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

export async function main(argv: string[]): Promise<void> {
  // Forked by a member's --workers pool (src/server/workers.ts): serve its client port.
  if (cluster.isWorker) return (await import('./server/worker.js')).runWorker();
  const [first, ...rest] = argv;
  if (first === undefined || first.startsWith('-')) return serve(argv);
  switch (first) {
    case 'serve':
      return serve(rest);
    case 'proxy':
      return proxy(rest);
    case 'version':
      process.stdout.write(`etcetera Version: ${ETCETERA_VERSION}\nAPI Version: ${ETCD_VERSION}\n`);
      return;
    case 'help':
      process.stdout.write(SERVE_USAGE);
      return;
    case 'certs': {
      const { CERTS_USAGE, runCerts } = await import('./cli/certs.js');
      if (rest.includes('--help') || rest.includes('-h')) {
        process.stdout.write(CERTS_USAGE);
        return;
      }
      for (const f of await runCerts(rest)) process.stdout.write(`wrote ${f}\n`);
      return;
    }
    default: {
      const { CLIENT_COMMANDS, runClientCommand } = await import('./cli/client.js');
      if (CLIENT_COMMANDS.includes(first)) {
        process.exitCode = await runClientCommand(argv);
        return;
      }
      process.stderr.write(
        `etcetera: unknown command ${JSON.stringify(first)}; serve, proxy, version, certs, ${CLIENT_COMMANDS.join(', ')}\n`,
      );
      process.exitCode = 2;
    }
  }
}

main(process.argv.slice(2)).catch((e: unknown) => {
  const message = isEtceteraError(e)
    ? e.message
    : e instanceof Error
      ? (e.stack ?? e.message)
      : String(e);
  process.stderr.write(`etcetera: ${message}\n`);
  process.exit(1);
});
