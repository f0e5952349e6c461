/**
 * The JSON transport as a Wire (wire.ts): etcd's JSON gateway routes over HTTP/1.1
 * (transport.ts), watches as one streaming POST each (watch.ts's httpWatches).
 */
import { fromB64 } from './codec.js';
import { ClientError } from './errors.js';
import { answer, type Json, type Transport } from './transport.js';
import { httpWatches } from './watch.js';
import { UNARY_PATHS, type UnaryRpc, type WatchCarrier, type Wire } from './wire.js';

export class JsonWire implements Wire {
  readonly protocol = 'json';
  readonly watches: WatchCarrier;

  constructor(readonly transport: Transport) {
    this.watches = httpWatches(transport);
  }

  unary(rpc: UnaryRpc, body: Json, read = false): Promise<Json> {
    return this.transport.post(UNARY_PATHS[rpc], body, read);
  }

  keepAliveOnce(id: string): Promise<Json> {
    return this.transport.post('/v3/lease/keepalive', { ID: id });
  }

  /** POST /v3/maintenance/snapshot: newline-delimited `{"result":{"blob":...}}` messages. */
  async *snapshot(): AsyncIterable<Uint8Array> {
    const req = this.transport.stream('/v3/maintenance/snapshot', {});
    const res = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      req.on('response', resolve);
      req.on('error', reject);
    });
    let buffered = '';
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        buffered += chunk.toString('utf8');
        let nl = buffered.indexOf('\n');
        while (nl >= 0) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          if (line !== '') {
            const r = answer(res.statusCode ?? 0, line);
            const blob = fromB64(r.blob);
            if (blob.length > 0) yield blob;
          }
          nl = buffered.indexOf('\n');
        }
      }
      if (buffered.trim() !== '') {
        const blob = fromB64(answer(res.statusCode ?? 0, buffered).blob);
        if (blob.length > 0) yield blob;
      }
    } catch (e) {
      if (e instanceof ClientError) throw e;
      throw new ClientError(`snapshot stream failed: ${(e as Error).message}`, 14, 0, {
        cause: e,
      });
    } finally {
      req.destroy();
    }
  }

  failover(): void {
    this.transport.failover();
  }

  close(): void {
    this.transport.close();
  }
}
