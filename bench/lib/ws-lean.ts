/**
 * A minimal websocket client for load generation: the HTTP upgrade through node:http, then
 * frames read straight off the socket. One 'data' event may carry hundreds of server frames;
 * they are cut out in one loop and handed over as views of the read buffer (no copy, no event
 * per frame), which costs a fraction of a full client's per-message work.
 *
 * Supported: unfragmented text/binary frames from the server (servers send unmasked frames),
 * ping (answered with pong) and close. Frames to the server are masked with a zero key, which
 * RFC 6455 allows (a client must mask; the key may be any value), so payloads go out as they are.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import type { Socket } from 'node:net';

export interface LeanWebSocket {
  send(text: string | Buffer): void;
  close(): void;
  readonly socket: Socket;
}

export interface LeanWebSocketHandlers {
  /** One message's payload: a view valid only during the call. */
  onMessage(payload: Buffer): void;
  onClose(reason: string): void;
}

const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;

/** Opens `url` (ws://host:port/path) and resolves once the upgrade is done. */
export function connectLean(
  url: string,
  handlers: LeanWebSocketHandlers,
  timeoutMs = 30_000,
): Promise<LeanWebSocket> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({
      host: u.hostname,
      port: u.port,
      path: u.pathname,
      timeout: timeoutMs,
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
      },
    });
    req.once('timeout', () => req.destroy(new Error(`${url}: upgrade timed out`)));
    req.once('error', reject);
    req.once('response', (res) =>
      reject(new Error(`${url}: HTTP ${res.statusCode} instead of an upgrade`)),
    );
    req.once('upgrade', (_res, socket: Socket, head: Buffer) => {
      socket.setNoDelay(true);
      socket.setTimeout(0);
      resolve(attach(socket, head, handlers));
    });
    req.end();
  });
}

function attach(socket: Socket, head: Buffer, handlers: LeanWebSocketHandlers): LeanWebSocket {
  let pending: Buffer | null = head.length > 0 ? head : null;
  let closed = false;
  const finish = (reason: string) => {
    if (closed) return;
    closed = true;
    socket.destroy();
    handlers.onClose(reason);
  };
  const ws: LeanWebSocket = {
    socket,
    send: (data) =>
      socket.write(frame(OP_TEXT, typeof data === 'string' ? Buffer.from(data) : data)),
    close: () => {
      if (!closed) socket.end(frame(OP_CLOSE, Buffer.alloc(0)));
      finish('closed by client');
    },
  };
  const onData = (chunk: Buffer) => {
    const buf = pending === null ? chunk : Buffer.concat([pending, chunk]);
    let at = 0;
    for (;;) {
      const f = parseFrame(buf, at);
      if (f === null) break;
      at = f.end;
      if (f.opcode === OP_TEXT || f.opcode === OP_BINARY)
        handlers.onMessage(buf.subarray(f.start, f.end));
      else if (f.opcode === OP_PING) socket.write(frame(OP_PONG, buf.subarray(f.start, f.end)));
      else if (f.opcode === OP_CLOSE)
        return finish(`closed by server: ${buf.toString('utf8', f.start + 2, f.end)}`);
      else if (f.opcode !== OP_PONG)
        return finish(`unsupported frame (opcode ${f.opcode}, fin ${f.fin})`);
      if (!f.fin) return finish('fragmented frames are not supported');
    }
    pending = at === buf.length ? null : buf.subarray(at);
  };
  socket.on('data', onData);
  socket.on('close', () => finish('socket closed'));
  socket.on('error', (e) => finish(e.message));
  if (pending !== null) {
    const h = pending;
    pending = null;
    queueMicrotask(() => onData(h));
  }
  return ws;
}

/** The frame at `at`, or null when it is not complete yet. */
function parseFrame(
  buf: Buffer,
  at: number,
): { opcode: number; fin: boolean; start: number; end: number } | null {
  if (buf.length - at < 2) return null;
  const b0 = buf[at]!;
  const b1 = buf[at + 1]!;
  let len = b1 & 0x7f;
  let start = at + 2;
  if (len === 126) {
    if (buf.length - at < 4) return null;
    len = buf.readUInt16BE(at + 2);
    start = at + 4;
  } else if (len === 127) {
    if (buf.length - at < 10) return null;
    len = buf.readUInt32BE(at + 2) * 2 ** 32 + buf.readUInt32BE(at + 6);
    start = at + 10;
  }
  if (b1 & 0x80) start += 4; // a masked frame from a server is a protocol error; skip the key
  if (buf.length < start + len) return null;
  return { opcode: b0 & 0x0f, fin: (b0 & 0x80) !== 0, start, end: start + len };
}

/** A final client frame with a zero mask key (payload unchanged). */
function frame(opcode: number, payload: Buffer): Buffer {
  const len = payload.length;
  const headLen = len < 126 ? 2 : len < 65_536 ? 4 : 10;
  const out = Buffer.allocUnsafe(headLen + 4 + len);
  out[0] = 0x80 | opcode;
  if (len < 126) out[1] = 0x80 | len;
  else if (len < 65_536) {
    out[1] = 0x80 | 126;
    out.writeUInt16BE(len, 2);
  } else {
    out[1] = 0x80 | 127;
    out.writeUInt32BE(Math.floor(len / 2 ** 32), 2);
    out.writeUInt32BE(len >>> 0, 6);
  }
  out.writeUInt32BE(0, headLen);
  payload.copy(out, headLen + 4);
  return out;
}
