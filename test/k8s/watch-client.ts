/**
 * A minimal watch client for tests: reads a ?watch=1 stream line by line and keeps what came.
 */
import { type IncomingMessage, request } from 'node:http';

export interface WatchEvent {
  type: string;
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
  object: any;
}

export interface WatchStream {
  status: number;
  headers: IncomingMessage['headers'];
  events: WatchEvent[];
  /** Raw bytes as they came (keepalive newlines included). */
  raw(): string;
  /** Resolves when the server ended the stream cleanly (rejects on a reset). */
  ended: Promise<void>;
  waitFor(pred: (events: WatchEvent[]) => boolean, ms?: number): Promise<boolean>;
  close(): void;
}

export function openWatch(
  base: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<WatchStream> {
  return new Promise((resolve, reject) => {
    const req = request(base + path, { headers }, (res) => {
      let buf = '';
      let raw = '';
      const events: WatchEvent[] = [];
      let endResolve: () => void = () => {};
      let endReject: (e: unknown) => void = () => {};
      const ended = new Promise<void>((res2, rej2) => {
        endResolve = res2;
        endReject = rej2;
      });
      ended.catch(() => undefined);
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        raw += chunk;
        buf += chunk;
        let i = buf.indexOf('\n');
        while (i >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (line.trim() !== '') events.push(JSON.parse(line));
          i = buf.indexOf('\n');
        }
      });
      res.on('end', () => endResolve());
      res.on('error', (e) => endReject(e));
      res.on('aborted', () => endReject(new Error('aborted')));
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        raw: () => raw,
        ended,
        async waitFor(pred, ms = 5000) {
          const until = Date.now() + ms;
          while (Date.now() < until) {
            if (pred(events)) return true;
            await new Promise((r) => setTimeout(r, 10));
          }
          return pred(events);
        },
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** `TYPE name` of each event, for compact assertions. */
export function summary(events: WatchEvent[]): string[] {
  return events.map(
    (e) => `${e.type} ${e.object?.metadata?.name ?? e.object?.metadata?.resourceVersion ?? ''}`,
  );
}
