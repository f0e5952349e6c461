/**
 * A watch, resumed on its own after a lost connection, over either carrier: etcd's HTTP
 * stream form (POST /v3/watch, newline-delimited `{"result": ...}` messages, one request per
 * watch: `httpWatches` below) or the gRPC Watch stream shared by every watch of a client
 * (grpc-watch.ts).
 *
 * Resume invariant: `nextRevision` is the first revision not yet delivered. It moves to
 * (last event's mod_revision + 1) after each batch — etcd sends all events of a revision in
 * one message — and to (R + 1) on a progress notification at R, which promises every event
 * at or below R was sent. The "created" message of a watch from now (start 0) at header
 * revision R sets it to R + 1. A reconnect asks for start_revision = nextRevision, so every
 * event is delivered exactly once, in order, across any number of reconnects.
 *
 * Ends for good only on close(), on a compaction past nextRevision (ERR_COMPACTED: the
 * events in between are gone), or when the server refuses the request itself.
 */
import type { ClientRequest, IncomingMessage } from 'node:http';
import { GrpcCode } from '../errors.js';
import { int64OfJson, type WatchResponseJson } from '../wire/etcd-json.js';
import { decodeEvent, decodeHeader, selector } from './codec.js';
import { ClientError } from './errors.js';
import type { Json, Transport } from './transport.js';
import type { KeyLike, ResponseHeader, WatchBatch, WatchOptions } from './types.js';
import type { WatchCarrier, WatchSink } from './wire.js';

export interface WatchHandlers {
  onBatch: (batch: WatchBatch) => void;
  /** A progress notification: nothing more at or below `header.revision`. */
  onProgress?: (header: ResponseHeader) => void;
  /** The watch ended for good (compaction, refused request). */
  onError?: (err: ClientError) => void;
  /** The connection was lost; the watch reconnects from `fromRevision`. */
  onReconnect?: (fromRevision: number, cause: unknown) => void;
}

const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 2000;

export class Watch {
  /** The first revision not yet delivered (0 until known for a watch from now). */
  nextRevision: number;
  /** Resolves with the header revision of the first "created" message. */
  readonly ready: Promise<number>;
  private resolveReady!: (rev: number) => void;
  private rejectReady!: (err: unknown) => void;
  /** The current attempt's cancel function; undefined between attempts. */
  private cancel: (() => void) | undefined;
  private attempt = 0;
  private closed = false;
  private backoffMs = BACKOFF_MIN_MS;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Reconnects so far (tests and operators read it). */
  reconnects = 0;

  constructor(
    private readonly carrier: WatchCarrier,
    private readonly key: KeyLike,
    private readonly options: WatchOptions,
    private readonly handlers: WatchHandlers,
  ) {
    this.nextRevision = options.startRevision ?? 0;
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => undefined);
    this.connect();
  }

  private createRequest(): Json {
    const filters = [
      ...(this.options.noPut ? ['NOPUT'] : []),
      ...(this.options.noDelete ? ['NODELETE'] : []),
    ];
    return {
      ...selector(this.key, this.options),
      start_revision: this.nextRevision > 0 ? this.nextRevision : undefined,
      progress_notify: this.options.progressNotify,
      filters: filters.length > 0 ? filters : undefined,
      prev_kv: this.options.prevKv,
    };
  }

  private connect(): void {
    if (this.closed) return;
    const attempt = ++this.attempt;
    const current = () => attempt === this.attempt && !this.closed;
    this.cancel = this.carrier.open(this.createRequest(), {
      message: (r) => current() && this.handle(r),
      lost: (cause) => {
        if (current()) this.lost(cause);
      },
      refused: (err) => {
        if (current()) this.fail(err instanceof ClientError ? err : wrap(err));
      },
    });
  }

  /** Handles one WatchResponse; false when the attempt must not be read further. */
  private handle(message: Json): boolean {
    const r = message as WatchResponseJson;
    const header = decodeHeader(r.header);
    if (r.created === true) {
      this.backoffMs = BACKOFF_MIN_MS;
      if (this.nextRevision === 0) this.nextRevision = header.revision + 1;
      this.resolveReady(header.revision);
    }
    if (r.canceled === true) return this.canceled(r);
    const events = (r.events ?? []).map(decodeEvent);
    if (events.length > 0) {
      const last = events[events.length - 1];
      this.nextRevision = (last?.kv.modRevision ?? this.nextRevision - 1) + 1;
      this.handlers.onBatch({ header, events });
    } else if (r.created !== true && header.revision > 0) {
      this.nextRevision = Math.max(this.nextRevision, header.revision + 1);
      this.handlers.onProgress?.(header);
    }
    return true;
  }

  private canceled(r: WatchResponseJson): false {
    const compacted = int64OfJson(r.compact_revision);
    if (compacted > 0) {
      this.fail(
        new ClientError(
          'etcdserver: mvcc: required revision has been compacted',
          GrpcCode.OutOfRange,
          200,
        ),
      );
    } else if (r.created === true) {
      // Refused as it was created (no permission, too many watches on the stream): asking
      // again would be refused again, so the watch ends, as etcd's clients end it.
      this.fail(refusal(String(r.cancel_reason ?? 'watch refused by the server')));
    } else {
      // Canceled by the server for another reason (a slow watcher, a restart): resume.
      this.lost(new Error(String(r.cancel_reason ?? 'watch canceled by the server')));
    }
    return false;
  }

  /** The current attempt is gone: reconnect after a backoff, unless closed. */
  private lost(cause: unknown): void {
    if (this.closed) return;
    this.attempt++;
    this.cancel?.();
    this.cancel = undefined;
    this.reconnects++;
    this.handlers.onReconnect?.(this.nextRevision, cause);
    const delay = this.backoffMs;
    this.backoffMs = Math.min(BACKOFF_MAX_MS, this.backoffMs * 2);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  private fail(err: ClientError): void {
    if (this.closed) return;
    this.closed = true;
    this.cancel?.();
    this.cancel = undefined;
    this.rejectReady(err);
    this.handlers.onError?.(err);
  }

  /** Stops the watch (the server is told) and frees its connection. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.cancel?.();
    this.cancel = undefined;
    this.rejectReady(new ClientError('watch closed', GrpcCode.Canceled, 0));
  }
}

function wrap(e: Error): ClientError {
  return new ClientError(e.message, GrpcCode.Unknown, 0, { cause: e });
}

/** The HTTP carrier: one streaming POST /v3/watch per watch attempt. */
export function httpWatches(transport: Transport): WatchCarrier {
  return {
    open(create, sink) {
      const req = transport.stream('/v3/watch', { create_request: create });
      let over = false;
      const lost = (cause: unknown) => {
        if (over) return;
        over = true;
        req.destroy();
        if (!(cause instanceof ClientError)) transport.failover();
        sink.lost(cause);
      };
      req.on('error', lost);
      req.on('response', (res) => {
        if (res.statusCode !== 200) return refused(res, sink, lost);
        res.setEncoding('utf8');
        let buffered = '';
        res.on('data', (chunk: string) => {
          buffered += chunk;
          let nl = buffered.indexOf('\n');
          while (nl >= 0 && !over) {
            const line = buffered.slice(0, nl).trim();
            buffered = buffered.slice(nl + 1);
            if (line !== '' && !handleLine(line, sink, lost)) {
              over = true;
              req.destroy();
              return;
            }
            nl = buffered.indexOf('\n');
          }
        });
        res.on('error', lost);
        res.on('close', () => lost(new Error('watch stream ended')));
      });
      return () => {
        over = true;
        req.destroy();
      };
    },
  };
}

function handleLine(line: string, sink: WatchSink, lost: (cause: unknown) => void): boolean {
  let msg: Json;
  try {
    msg = JSON.parse(line) as Json;
  } catch (e) {
    lost(e);
    return false;
  }
  if (msg.error !== undefined) {
    const e = msg.error as { grpc_code?: number; http_code?: number; message?: string };
    lost(new ClientError(e.message ?? 'watch error', e.grpc_code ?? 2, e.http_code ?? 0));
    return false;
  }
  return sink.message((msg.result ?? {}) as Json);
}

function refused(
  res: IncomingMessage,
  sink: WatchSink,
  lost: (cause: unknown) => void,
): ClientRequest | undefined {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => {
    const status = res.statusCode ?? 0;
    let body: Json = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
    } catch {}
    const err = new ClientError(
      String(body.message ?? `HTTP ${status}`),
      Number(body.code ?? 2),
      status,
    );
    if (status >= 400 && status < 500) sink.refused(err);
    else lost(err);
  });
  return undefined;
}

/** A cancel reason in grpc-go's form (`rpc error: code = X desc = text`) as a ClientError. */
function refusal(reason: string): ClientError {
  const m = /^rpc error: code = (\w+) desc = (.*)$/s.exec(reason);
  const name = m?.[1] as keyof typeof GrpcCode | undefined;
  const code =
    name !== undefined && name in GrpcCode ? GrpcCode[name] : GrpcCode.FailedPrecondition;
  return new ClientError(m?.[2] ?? reason, code, 200);
}
