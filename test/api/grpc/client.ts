/** A raw gRPC client for the tests: grpc-js with protobufjs types of src/wire/proto. */
import grpc from '@grpc/grpc-js';
import { etcdProto } from '../../../src/wire/proto/index.js';

// biome-ignore lint/suspicious/noExplicitAny: decoded test messages are read field by field
export type Msg = Record<string, any>;

const p = etcdProto();
const OBJ = { longs: Number, enums: String, defaults: false } as const;

export function decode(typeName: string, b: Buffer): Msg {
  const T = p.type(typeName);
  return T.toObject(T.decode(b), OBJ) as Msg;
}

export function encode(typeName: string, m: Msg): Buffer {
  const T = p.type(typeName);
  return Buffer.from(T.encode(T.fromObject(m)).finish());
}

export class RawClient {
  readonly client: grpc.Client;
  constructor(hostPort: string, options: grpc.ChannelOptions = {}) {
    this.client = new grpc.Client(hostPort, grpc.credentials.createInsecure(), options);
  }

  /** A unary call; `request` a message object or raw bytes. Rejects with the grpc-js error. */
  call(path: string, request: Msg | Buffer): Promise<Msg> {
    const m = p.methods.get(path);
    const reqType = m?.requestType.fullName.slice(1) ?? '';
    const resType = m?.responseType.fullName.slice(1) ?? '';
    const bytes = Buffer.isBuffer(request) ? request : encode(reqType, request);
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        path,
        (b: Buffer) => b,
        (b: Buffer) => b,
        bytes,
        (err, res) => (err ? reject(err) : resolve(decode(resType, res!))),
      );
    });
  }

  /** The Watch stream: send WatchRequests, read WatchResponses in order. */
  watch(): WatchStream {
    return new WatchStream(
      this.client.makeBidiStreamRequest(
        '/etcdserverpb.Watch/Watch',
        (b: Buffer) => b,
        (b: Buffer) => b,
      ),
    );
  }

  close(): void {
    this.client.close();
  }
}

export class WatchStream {
  private readonly queue: Msg[] = [];
  private waiters: (() => void)[] = [];
  error: (Error & { code?: number; details?: string }) | undefined;
  ended = false;

  constructor(readonly call: grpc.ClientDuplexStream<Buffer, Buffer>) {
    call.on('data', (b: Buffer) => {
      this.queue.push(decode('etcdserverpb.WatchResponse', b));
      this.wake();
    });
    call.on('error', (e) => {
      this.error = e;
      this.wake();
    });
    call.on('end', () => {
      this.ended = true;
      this.wake();
    });
  }

  private wake(): void {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }

  send(request: Msg): void {
    this.call.write(encode('etcdserverpb.WatchRequest', request));
  }

  /** The next response (rejects after `ms` or when the stream fails first). */
  async next(ms = 10_000): Promise<Msg> {
    const deadline = Date.now() + ms;
    while (this.queue.length === 0) {
      if (this.error) throw this.error;
      if (this.ended) throw new Error('watch stream ended');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('no watch response in time');
      await new Promise<void>((r) => {
        const timer = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          r();
        });
      });
    }
    return this.queue.shift()!;
  }

  /** Responses until one satisfies `pred` (that one included). */
  async until(pred: (m: Msg) => boolean, ms = 10_000): Promise<Msg[]> {
    const out: Msg[] = [];
    for (;;) {
      const m = await this.next(ms);
      out.push(m);
      if (pred(m)) return out;
    }
  }

  /** The client is done with the stream: it cancels the call (etcd serves on until then). */
  end(): void {
    this.call.cancel();
  }

  /** Ends the client's send side only; the server's answers keep coming. */
  halfClose(): void {
    this.call.end();
  }
}

export const b = (s: string) => Buffer.from(s);
export const s = (x: Uint8Array | undefined) => (x === undefined ? '' : Buffer.from(x).toString());
