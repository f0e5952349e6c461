/**
 * A watch stream: `GET <collection>?watch=true`, one JSON event per line. Bare newlines
 * (keepalives) are skipped. The stream ends when the server ends it (timeoutSeconds, a
 * server shutdown, after an ERROR event) or when `close()` is called; a broken connection
 * or a line that is not JSON ends it with an error, so a caller can resume from the last
 * resourceVersion it saw.
 */
import { KubeApiError, transportFailure } from './errors.js';
import type { KubeTransport, Query } from './http.js';
import type { KubeObject, WatchEvent } from './types.js';

export interface WatchStream<T extends KubeObject = KubeObject>
  extends AsyncIterable<WatchEvent<T>> {
  /** Stops the stream (the iterator then ends without error). */
  close(): void;
  readonly closed: boolean;
}

const TYPES = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);

function parseEvent<T extends KubeObject>(line: string): WatchEvent<T> {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (e) {
    throw malformed(`watch event is not JSON: ${line.slice(0, 200)}`, e);
  }
  const ev = v as { type?: unknown; object?: unknown };
  if (
    typeof ev !== 'object' ||
    ev === null ||
    !TYPES.has(ev.type as string) ||
    typeof ev.object !== 'object' ||
    ev.object === null
  ) {
    throw malformed(`not a watch event: ${line.slice(0, 200)}`);
  }
  return ev as WatchEvent<T>;
}

function malformed(message: string, cause?: unknown): KubeApiError {
  return new KubeApiError(
    0,
    { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'InternalError', message },
    cause === undefined ? undefined : { cause },
  );
}

/** Opens a watch; resolves once the server accepted it (rejects with KubeApiError if not). */
export interface OpenWatchOptions {
  signal?: AbortSignal;
  /**
   * End the stream with an error when no byte came for this long (a half-open connection
   * would otherwise wait forever). etcetera writes a newline every 15 s on quiet watches.
   * 0 or absent: no limit.
   */
  idleTimeoutMs?: number;
}

/** Opens a watch; resolves once the server accepted it (rejects with KubeApiError if not). */
export async function openWatch<T extends KubeObject>(
  transport: KubeTransport,
  path: string,
  query: Query,
  options: OpenWatchOptions = {},
): Promise<WatchStream<T>> {
  const { signal, idleTimeoutMs = 0 } = options;
  const controller = new AbortController();
  const onAbort = () => controller.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) controller.abort();
  const res = await transport.stream(path, { ...query, watch: true }, controller.signal);
  let closed = false;
  let idle = false;
  let idleTimer: NodeJS.Timeout | undefined;
  const armIdle = () => {
    if (idleTimeoutMs <= 0 || closed) return;
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => {
      idle = true;
      controller.abort();
    }, idleTimeoutMs);
    idleTimer.unref();
  };
  const close = () => {
    if (closed) return;
    closed = true;
    clearTimeout(idleTimer);
    signal?.removeEventListener('abort', onAbort);
    controller.abort();
  };
  async function* events(): AsyncGenerator<WatchEvent<T>> {
    const body = res.body;
    if (!body) return;
    const decoder = new TextDecoder();
    let buf = '';
    armIdle();
    try {
      for await (const chunk of body as AsyncIterable<Uint8Array>) {
        armIdle();
        buf += decoder.decode(chunk, { stream: true });
        let nl = buf.indexOf('\n');
        while (nl >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line !== '') yield parseEvent<T>(line);
          nl = buf.indexOf('\n');
        }
      }
      const rest = (buf + decoder.decode()).trim();
      if (rest !== '') yield parseEvent<T>(rest);
    } catch (e) {
      if (idle)
        throw malformed(`watch idle for ${idleTimeoutMs} ms: no data, not even a keepalive`);
      if (closed) return;
      throw e instanceof KubeApiError ? e : transportFailure(e);
    } finally {
      close();
    }
  }
  const iterator = events();
  return {
    [Symbol.asyncIterator]: () => iterator,
    close,
    get closed() {
      return closed;
    },
  };
}
