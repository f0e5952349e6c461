/**
 * The watch stream over websockets, for browser clients: `GET <collection>?watch=1` with an
 * Upgrade header. Each event is one message (the same JSON as a line of the HTTP stream);
 * keepalives are pings. With the Kubernetes subprotocols `binary.k8s.io` the messages are
 * binary frames, with `base64.binary.k8s.io` base64 text; otherwise plain text frames.
 * A request that fails before the stream starts gets an ordinary HTTP Status answer.
 */
import type { IncomingMessage } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { badRequest, pathNotFound, toStatusError } from '../../../k8s/status.js';
import type { Kube } from '../context.js';
import { parseListOptions } from '../list-options.js';
import { isKubernetesPath, parsePath } from '../paths.js';
import { resolveResource } from '../server.js';
import { prepareWatch } from './http.js';
import { startWatch } from './start.js';
import type { WatchSink } from './watcher.js';

const PROTOCOLS = ['binary.k8s.io', 'base64.binary.k8s.io'];

function refuse(socket: Duplex, err: unknown): void {
  const st = toStatusError(err).status;
  const body = JSON.stringify(st);
  socket.end(
    `HTTP/1.1 ${st.code} ${STATUS_CODES[st.code] ?? 'Error'}\r\n` +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `Connection: close\r\n\r\n${body}`,
  );
}

function wsSink(ws: WebSocket): WatchSink {
  const mode = ws.protocol;
  return {
    write(text) {
      if (ws.readyState !== ws.OPEN) return;
      if (text === '\n') {
        ws.ping();
        return;
      }
      const msg = text.endsWith('\n') ? text.slice(0, -1) : text;
      if (mode === 'binary.k8s.io') ws.send(Buffer.from(msg), { binary: true });
      else if (mode === 'base64.binary.k8s.io') ws.send(Buffer.from(msg).toString('base64'));
      else ws.send(msg);
    },
    bufferedBytes: () => ws.bufferedAmount,
    end() {
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(1000);
    },
  };
}

export interface KubeUpgrade {
  /** Handles an upgrade on a Kubernetes path (true), or leaves it to others (false). */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  close(): void;
}

export function kubeUpgrade(kube: Kube, startFace: () => Promise<void>): KubeUpgrade {
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: 64 * 1024,
    handleProtocols: (offered) => PROTOCOLS.find((p) => offered.has(p)) ?? false,
  });
  const serve = async (req: IncomingMessage, socket: Duplex, head: Buffer, url: URL) => {
    await startFace();
    const route = parsePath(url.pathname);
    if (route?.type !== 'resource' || route.name !== undefined) throw pathNotFound();
    const info = resolveResource(kube, route);
    const o = parseListOptions(url.searchParams);
    if (!o.watch) throw badRequest('only watch requests (watch=1) are served over websockets');
    const start = await prepareWatch(kube, { info, path: route, query: url.searchParams, req }, o);
    wss.handleUpgrade(req, socket, head, (ws) => {
      const w = startWatch(kube.hub, kube.cacher, start, wsSink(ws), kube.options.now);
      ws.on('close', () => w.close());
      ws.on('error', () => w.close());
      // Clients send nothing meaningful; reading keeps the socket flowing.
      ws.on('message', () => undefined);
    });
  };
  return {
    handle(req, socket, head) {
      let url: URL;
      try {
        url = new URL(req.url ?? '/', 'http://localhost');
      } catch {
        return false;
      }
      if (!isKubernetesPath(url.pathname)) return false;
      socket.on('error', () => socket.destroy());
      serve(req, socket, head, url).catch((e: unknown) => refuse(socket, e));
      return true;
    },
    close() {
      for (const c of wss.clients) c.close(1001);
      wss.close();
    },
  };
}
