/**
 * One worker process of `etcetera serve --workers N` (workers.ts is the member's side). It
 * takes its WorkerSpec from its member over IPC, listens on the client URLs at once (the
 * ports are shared through node:cluster), and serves the JSON API, gRPC, websockets and the
 * Kubernetes face, built exactly as the member builds them (client-http.ts `faceOptions`),
 * over a remote member (src/tier) whose upstream is the member's unix socket: its own watch
 * cache fed by one upstream watch, writes and reads forwarded.
 *
 * Until the remote member has connected and its cache is fed, requests wait behind a
 * ServeGate (a 503 after `readyTimeoutMs`), as a member's do before its publish. The worker
 * exits when its member is gone (the IPC channel closed) or on SIGTERM, after closing its
 * listeners; a start failure (a port in use, a bad certificate) is reported to the member
 * and ends the process with code 1.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { Gauge } from 'prom-client';
import { isEtceteraError } from '../errors.js';
import { createRemoteMember, type RemoteMember } from '../tier/remote-member.js';
import {
  apiFace,
  type ClientFace,
  ClientListeners,
  faceOptions,
  ServeGate,
} from './client-http.js';
import { loadKubeAuth } from './kube-auth.js';
import { createLogger, type Logger } from './logger.js';
import { WORKER_ENV, type WorkerMessage, type WorkerSpec } from './workers.js';

function tell(m: WorkerMessage): void {
  if (process.connected) process.send?.(m);
}

function receiveSpec(): Promise<WorkerSpec> {
  return new Promise((resolve) => {
    const on = (m: { type?: string; spec?: WorkerSpec }) => {
      if (m?.type !== 'spec' || m.spec === undefined) return;
      process.off('message', on);
      resolve(m.spec);
    };
    process.on('message', on);
    tell({ type: 'ready' });
  });
}

/** A face whose parts are filled in later (once the remote member exists). */
function lateFace(): { face: ClientFace; set(inner: ClientFace): void } {
  let inner: ClientFace | undefined;
  const face: ClientFace = {
    handler: (req, res) => inner?.handler(req, res),
    upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (inner?.upgrade !== undefined) inner.upgrade(req, socket, head);
      else socket.destroy();
    },
    grpc: {
      injectConnection: (socket) => {
        if (inner?.grpc !== undefined) inner.grpc.injectConnection(socket);
        else socket.destroy();
      },
      close: async () => undefined,
    },
    close: () => inner?.close?.(),
  };
  return { face, set: (f) => (inner = f) };
}

/** Runs this process as a worker; returns once it serves (or exits on failure). */
export async function runWorker(): Promise<void> {
  const slot = Number(process.env[WORKER_ENV] ?? '0');
  const spec = await receiveSpec();
  const logger = createLogger({ level: spec.logLevel, name: spec.name }).child({
    worker: slot,
    pid: process.pid,
  });
  const kubeAuth = loadKubeAuth(spec.kubeAuth, spec.clientCertAuth, spec.loopbackToken);
  const gate = new ServeGate(spec.readyTimeoutMs);
  const late = lateFace();
  let listeners: ClientListeners | undefined;
  let remote: RemoteMember | undefined;
  let stopping = false;
  const stop = (code: number) => {
    if (stopping) return;
    stopping = true;
    void (async () => {
      await listeners?.close().catch(() => undefined);
      await remote?.close().catch(() => undefined);
      await kubeAuth.audit?.close();
      process.exit(code);
    })();
  };
  process.on('disconnect', () => stop(0));
  process.on('SIGTERM', () => stop(0));
  // A terminal's Ctrl-C reaches the whole process group: the member decides, and ends its workers.
  process.on('SIGINT', () => undefined);
  try {
    listeners = await ClientListeners.open(
      gate.guard(late.face),
      spec.listenClientUrls.map((u) => new URL(u)),
      {
        maxConnections: spec.client.maxConnections,
        readHeaderTimeoutMs: spec.client.readHeaderTimeoutMs,
        ...(spec.tls !== undefined ? { tls: spec.tls } : {}),
        logger,
      },
    );
  } catch (e) {
    failed(logger, e);
    return;
  }
  tell({ type: 'listening', urls: listeners.urls.map((u) => u.href) });
  try {
    remote = await createRemoteMember({
      endpoints: [spec.upstream],
      maxRequestBytes: spec.maxRequestBytes,
      requestTimeoutMs: spec.readyTimeoutMs,
      logger,
    });
  } catch (e) {
    failed(logger, e);
    return;
  }
  new Gauge({
    name: 'etcetera_worker',
    help: 'This worker process of --workers: its slot and PID (value 1)',
    labelNames: ['slot', 'pid'],
    registers: [remote.metrics],
  }).set({ slot: String(slot), pid: String(process.pid) }, 1);
  late.set(apiFace(remote, logger, faceOptions(spec.client, kubeAuth)));
  gate.open();
  logger.info({ upstream: spec.upstream }, 'worker serving');

  function failed(log: Logger, e: unknown): void {
    const code = isEtceteraError(e) ? e.code : (e as NodeJS.ErrnoException).code;
    log.error({ err: String(e) }, 'worker failed');
    tell({ type: 'failed', error: String((e as Error)?.message ?? e), ...(code ? { code } : {}) });
    stop(1);
  }
}
