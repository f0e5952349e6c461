/**
 * A TCP proxy for client tests, on 127.0.0.1, that can take the network away from a client
 * in the two ways that matter to informers:
 * - `freeze()`: bytes from clients are held (a request sent now, on a new or a kept-alive
 *   connection, reaches the server only at `thaw()`); answers still flow back;
 * - `cut()`: every connection is reset, and with `refuse(true)` new ones are reset at once.
 */
import net from 'node:net';

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  held: Buffer[];
}

export class TcpProxy {
  private readonly pairs = new Set<Pair>();
  private frozen = false;
  private refusing = false;
  private heldWaiters: (() => void)[] = [];

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = net.createServer((client) => proxy?.accept(client, targetPort));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = new TcpProxy(server, (server.address() as net.AddressInfo).port);
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private accept(client: net.Socket, targetPort: number): void {
    if (this.refusing) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(targetPort, '127.0.0.1');
    const pair: Pair = { client, upstream, held: [] };
    this.pairs.add(pair);
    client.on('data', (d) => {
      if (this.frozen) {
        pair.held.push(d);
        for (const w of this.heldWaiters.splice(0)) w();
      } else upstream.write(d);
    });
    upstream.on('data', (d) => client.write(d));
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
    const drop = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
  }

  freeze(): void {
    this.frozen = true;
  }

  /** Bytes clients sent while frozen. */
  heldBytes(): number {
    let n = 0;
    for (const p of this.pairs) for (const b of p.held) n += b.length;
    return n;
  }

  /** Resolves true once a client sent something while frozen (false after `ms`). */
  async waitForHeld(ms = 10_000): Promise<boolean> {
    if (this.heldBytes() > 0) return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.heldWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  thaw(): void {
    this.frozen = false;
    for (const p of this.pairs) {
      for (const b of p.held.splice(0)) p.upstream.write(b);
    }
  }

  refuse(on: boolean): void {
    this.refusing = on;
  }

  /** Resets every connection (the clients see ECONNRESET). */
  cut(): void {
    for (const p of [...this.pairs]) {
      p.client.resetAndDestroy();
      p.upstream.destroy();
      this.pairs.delete(p);
    }
  }

  get connections(): number {
    return this.pairs.size;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
