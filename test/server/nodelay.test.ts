/**
 * The client listener turns Nagle's algorithm off on every connection it accepts, the ones
 * it hands to the HTTP/1 server (the JSON API) and to gRPC alike, as etcd's Go listeners
 * do: a small answer written in several pieces must not wait for the client's
 * acknowledgement of the first. A real member on loopback;
 * the test records which server-side sockets got TCP_NODELAY, then makes a gRPC and a JSON
 * client talk to the member over real connections.
 */
import { Socket } from 'node:net';
import t from 'tap';
import { Client } from '../../src/client/index.js';
import { startMember } from '../api/servers.js';

t.test('every accepted client connection has TCP_NODELAY, gRPC and JSON', async (t) => {
  let port = -1;
  /** Remote ports of the member's accepted sockets that had TCP_NODELAY turned on. */
  const noDelay = new Set<number>();
  const original = Socket.prototype.setNoDelay;
  Socket.prototype.setNoDelay = function (this: Socket, on?: boolean) {
    if (on !== false && this.localPort === port && this.remotePort !== undefined) {
      noDelay.add(this.remotePort);
    }
    return original.call(this, on);
  };
  t.teardown(() => {
    Socket.prototype.setNoDelay = original;
  });
  const target = await startMember(t.testdir());
  t.teardown(() => target.close());
  port = Number(new URL(target.url).port);
  for (const transport of ['grpc', 'json'] as const) {
    const before = noDelay.size;
    const client = new Client({ endpoints: [target.url], transport });
    await client.put(`nagle/${transport}`, 'v');
    const got = await client.get(`nagle/${transport}`);
    t.equal(Buffer.from(got.kvs[0]!.value).toString(), 'v', `${transport}: put and get answered`);
    t.ok(
      noDelay.size > before,
      `${transport}: the member's side of the connection has TCP_NODELAY`,
    );
    client.close();
  }
});
