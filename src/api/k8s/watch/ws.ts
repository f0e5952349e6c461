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
import { impersonate } from '../authz.js';
import type { Kube } from '../context.js';
import { parseListOptions } from '../list-options.js';
import { isKubernetesPath, parsePath } from '../paths.js';
import { admit, resolveResource } from '../server.js';
import { prepareWatch } from './http.js';
import { startWatch } from './start.js';
import type { WatchSink } from './watch.js';

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

/**
 * Each line (one event) is one message. The stream's frames may carry several lines (one
 * revision's events): they are split here. Drain: the websocket has no drain event, so the
 * listeners run when the last message sent so far has been written to the socket.
 */
function wsSink(ws: WebSocket): WatchSink {
  const mode = ws.protocol;
  let inFlight = 0;
  let drainListeners: (() => void)[] = [];
  const sent = () => {
    if (--inFlight > 0 || drainListeners.length === 0) return;
    const ls = drainListeners;
    drainListeners = [];
    for (const l of ls) l();
  };
  const sendLine = (msg: string) => {
    inFlight++;
    if (mode === 'binary.k8s.io') ws.send(Buffer.from(msg), { binary: true }, sent);
    else if (mode === 'base64.binary.k8s.io') ws.send(Buffer.from(msg).toString('base64'), sent);
    else ws.send(msg, sent);
  };
  return {
    write(text) {
      if (ws.readyState !== ws.OPEN) return;
      if (text === '\n') {
        ws.ping();
        return;
      }
      let start = 0;
      while (start < text.length) {
        let end = text.indexOf('\n', start);
        if (end < 0) end = text.length;
        if (end > start) sendLine(text.slice(start, end));
        start = end + 1;
      }
    },
    bufferedBytes: () => ws.bufferedAmount,
    onceDrain(listener) {
      if (inFlight === 0) queueMicrotask(listener);
      else drainListeners.push(listener);
    },
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
    const authenticated = await kube.authenticate(req);
    await startFace();
    const user = impersonate(req, authenticated, kube.authorize);
    const route = parsePath(url.pathname);
    admit(kube, req, url, route, user);
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
