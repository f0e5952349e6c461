/**
 * A gRPC server call served straight on a node:http2 stream, without grpc-js's per-message
 * machinery: the Watch stream uses it, so that everything one flush has for a stream (many
 * watches' responses) leaves in one HTTP/2 stream write, each response with its own 5-byte
 * gRPC prefix, instead of one grpc-js write (serialize, compression check, frame, stream
 * write, callback) per response. grpc-js still serves every other method and owns the
 * connection (SETTINGS, --max-concurrent-streams, keepalive pings, the ping policy).
 *
 * What it keeps of the protocol: the request's messages are cut at their length prefixes
 * (gzip and deflate ones are inflated, as grpc-js accepts them; a message over the receive
 * limit ends the call with RESOURCE_EXHAUSTED and grpc-js's text); the response opens with
 * grpc's headers and ends with grpc-status and grpc-message trailers. Backpressure is
 * HTTP/2's: a write's bytes count as buffered until node:http2 has handed them on, which it
 * does only as the peer's flow-control window allows, so a client that stops reading fills
 * the buffer and its writer (the watch connection) stops taking frames.
 */
import {
  constants,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import { gunzipSync, inflateSync } from 'node:zlib';
import { GrpcCode } from '../../errors.js';
import type { GrpcStatus } from './status.js';

/** Bytes of gRPC's message prefix: a compressed flag and a big-endian uint32 length. */
export const GRPC_PREFIX_BYTES = 5;

export interface RawCallOptions {
  /** Largest request message taken; a longer one ends the call with RESOURCE_EXHAUSTED. */
  maxReceiveBytes: number;
}

export interface RawCallHandlers {
  /** One whole request message (decompressed). */
  message(bytes: Buffer): void;
  /** The client half-closed the stream. */
  end(): void;
  /** The stream is gone (reset, session closed, or ended by us); called once. */
  close(): void;
}

/** The percent-encoding of grpc-message: printable ASCII but '%' as is, all else %XX. */
export function encodeGrpcMessage(s: string): string {
  let out = '';
  for (const byte of Buffer.from(s, 'utf8')) {
    if (byte >= 0x20 && byte <= 0x7e && byte !== 0x25) out += String.fromCharCode(byte);
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export class RawGrpcCall {
  private pending = 0;
  private waiters: (() => void)[] = [];
  private inbox: Buffer[] = [];
  private inboxBytes = 0;
  private ended = false;
  private closed = false;
  private handlers: RawCallHandlers | null = null;
  private readonly encoding: string;

  constructor(
    private readonly stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    private readonly options: RawCallOptions,
  ) {
    const enc = headers['grpc-encoding'];
    this.encoding = typeof enc === 'string' ? enc : 'identity';
    stream.on('error', () => {
      // A reset or a broken session; 'close' follows and ends the call.
    });
    stream.respond(
      {
        [constants.HTTP2_HEADER_STATUS]: constants.HTTP_STATUS_OK,
        [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc+proto',
        'grpc-accept-encoding': 'identity,deflate,gzip',
      },
      { waitForTrailers: true },
    );
  }

  /** Starts reading; `handlers` get the call's requests and its end. */
  start(handlers: RawCallHandlers): void {
    this.handlers = handlers;
    this.stream.on('data', (chunk: Buffer) => this.onData(chunk));
    this.stream.on('end', () => {
      if (!this.closed) handlers.end();
    });
    this.stream.on('close', () => this.onClose());
  }

  /** Whether writes still reach the client. */
  get writable(): boolean {
    return !this.ended && !this.closed && !this.stream.destroyed;
  }

  /**
   * Writes messages (each given as the parts of its bytes), every one with its prefix, in
   * one stream write.
   */
  writeMessages(
    messages: readonly { readonly chunks: readonly Buffer[]; readonly bytes: number }[],
  ) {
    if (!this.writable || messages.length === 0) return;
    let total = 0;
    for (const m of messages) total += GRPC_PREFIX_BYTES + m.bytes;
    const out = Buffer.allocUnsafe(total);
    let at = 0;
    for (const m of messages) {
      out[at] = 0;
      out.writeUInt32BE(m.bytes, at + 1);
      at += GRPC_PREFIX_BYTES;
      for (const c of m.chunks) at += c.copy(out, at);
    }
    this.pending += total;
    this.stream.write(out, () => {
      this.pending -= total;
      this.drained();
    });
  }

  /** Bytes written that node:http2 has not handed on yet. */
  bufferedBytes(): number {
    return this.pending;
  }

  onceDrain(listener: () => void): void {
    this.waiters.push(listener);
    this.drained();
  }

  /** Ends the call with a status (trailers after whatever was written). */
  finish(status: GrpcStatus): void {
    if (!this.writable) return;
    this.ended = true;
    this.stream.once('wantTrailers', () => {
      try {
        this.stream.sendTrailers({
          'grpc-status': String(status.code),
          'grpc-message': encodeGrpcMessage(status.details),
        } satisfies OutgoingHttpHeaders);
      } catch {
        // The stream went away in between: nothing to tell.
      }
    });
    this.stream.end();
    this.close();
  }

  private drained(): void {
    if (this.pending > 0 || this.waiters.length === 0) return;
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }

  private onClose(): void {
    this.close();
    // Nothing drains any more: let a waiting writer see the end rather than wait forever.
    this.pending = 0;
    this.drained();
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.inbox = [];
    this.handlers?.close();
  }

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    this.inbox.push(chunk);
    this.inboxBytes += chunk.length;
    while (!this.closed && this.inboxBytes >= GRPC_PREFIX_BYTES) {
      const head = this.peek(GRPC_PREFIX_BYTES);
      const compressed = head[0] !== 0;
      const length = head.readUInt32BE(1);
      if (length > this.options.maxReceiveBytes) {
        this.finish({
          code: GrpcCode.ResourceExhausted,
          details: `Received message larger than max (${length} vs ${this.options.maxReceiveBytes})`,
        });
        return;
      }
      if (this.inboxBytes < GRPC_PREFIX_BYTES + length) return;
      const whole = this.take(GRPC_PREFIX_BYTES + length).subarray(GRPC_PREFIX_BYTES);
      let message: Buffer;
      try {
        message = compressed ? this.inflate(whole) : whole;
      } catch (e) {
        this.finish({ code: GrpcCode.Internal, details: (e as Error).message });
        return;
      }
      this.handlers?.message(message);
    }
  }

  private inflate(bytes: Buffer): Buffer {
    const limit = { maxOutputLength: this.options.maxReceiveBytes };
    if (this.encoding === 'gzip') return gunzipSync(bytes, limit);
    if (this.encoding === 'deflate') return inflateSync(bytes, limit);
    throw new Error(`Received compressed message but "grpc-encoding" header was ${this.encoding}`);
  }

  /** The first `n` bytes of the inbox, without taking them. */
  private peek(n: number): Buffer {
    if (this.inbox[0]!.length < n) this.inbox = [Buffer.concat(this.inbox)];
    return this.inbox[0]!.subarray(0, n);
  }

  private take(n: number): Buffer {
    if (this.inbox[0]!.length < n) this.inbox = [Buffer.concat(this.inbox)];
    const first = this.inbox[0]!;
    const out = first.subarray(0, n);
    if (first.length === n) this.inbox.shift();
    else this.inbox[0] = first.subarray(n);
    this.inboxBytes -= n;
    return out;
  }
}
