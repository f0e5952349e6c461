/**
 * The server's keepalive enforcement on one HTTP/2 session, as grpc-go's server applies it
 * for etcd (--grpc-keepalive-min-time): a PING that arrives sooner than the minimum time
 * after the previous one is a strike (with no stream open, any PING within two hours is, as
 * etcd does not permit pings without streams); the server sending data on a stream, or a new
 * stream, forgives the strikes; a third strike gets a GOAWAY with ENHANCE_YOUR_CALM and the
 * debug data "too_many_pings" (which grpc clients read as "ping less often"), and the
 * connection is closed. node:http2 answers the PINGs themselves.
 */
import { constants, type Http2Stream, type ServerHttp2Session } from 'node:http2';

/** grpc-go's maxPingStrikes: the third strike closes the connection. */
export const MAX_PING_STRIKES = 2;
/** With no stream open, pings closer than this are strikes (grpc-go's defaultPingTimeout). */
export const NO_STREAM_PING_MS = 2 * 60 * 60 * 1000;
/** grpc-go's policy when etcd sets none (--grpc-keepalive-min-time=0): five minutes. */
export const DEFAULT_MIN_TIME_MS = 5 * 60 * 1000;
/** How long the GOAWAY gets to leave before the connection is destroyed. */
const GOAWAY_GRACE_MS = 100;
export const TOO_MANY_PINGS = Buffer.from('too_many_pings', 'latin1');

export interface PingPolicy {
  /** --grpc-keepalive-min-time in ms; 0 means grpc-go's default policy. */
  minTimeMs: number;
  now?: () => number;
  /** Told once when a client is sent away. */
  onEnforced?: (remote: string | undefined) => void;
}

export function enforcePingPolicy(session: ServerHttp2Session, policy: PingPolicy): void {
  const now = policy.now ?? Date.now;
  const minTimeMs = policy.minTimeMs > 0 ? policy.minTimeMs : DEFAULT_MIN_TIME_MS;
  let active = 0;
  let lastStreamId = 0;
  let lastPingAt: number | undefined;
  let strikes = 0;
  let forgiven = false;
  let enforced = false;
  session.on('stream', (stream: Http2Stream) => {
    active++;
    forgiven = true;
    lastStreamId = Math.max(lastStreamId, stream.id ?? 0);
    stream.once('close', () => active--);
    // grpc-go forgives strikes whenever it sends data: wrap this stream's writes to see them.
    const write = stream.write.bind(stream) as (...a: unknown[]) => boolean;
    stream.write = ((...a: unknown[]) => {
      forgiven = true;
      return write(...a);
    }) as typeof stream.write;
  });
  session.on('ping', () => {
    if (enforced) return;
    const at = now();
    const last = lastPingAt;
    lastPingAt = at;
    if (forgiven) {
      forgiven = false;
      strikes = 0;
      return;
    }
    const window = active === 0 ? NO_STREAM_PING_MS : minTimeMs;
    if (last !== undefined && at - last < window) strikes++;
    if (strikes <= MAX_PING_STRIKES) return;
    enforced = true;
    policy.onEnforced?.(session.socket?.remoteAddress);
    try {
      session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM, lastStreamId, TOO_MANY_PINGS);
    } catch {
      // already closing
    }
    setTimeout(() => session.destroy(), GOAWAY_GRACE_MS).unref();
  });
}
