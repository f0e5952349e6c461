/**
 * The client's watch: resume from the first undelivered revision after a lost connection,
 * a progress notification or a server-side cancel; the end on a compaction or a refused
 * request. A scripted /v3/watch server plays etcd's stream form so every step is exact.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { Client, isClientError, text, type WatchBatch } from '../../src/client/index.js';

type Step = (res: ServerResponse, req: IncomingMessage) => void;

const header = (revision: number) => ({
  cluster_id: '1',
  member_id: '2',
  revision: String(revision),
  raft_term: '3',
});
const line = (res: ServerResponse, result: object) => res.write(`${JSON.stringify({ result })}\n`);
const put = (key: string, rev: number) => ({
  kv: {
    key: Buffer.from(key).toString('base64'),
    create_revision: '2',
    mod_revision: String(rev),
    version: '1',
  },
});

/** Serves one script step per connection and records each create_request. */
async function scripted(t: Test, steps: Step[]) {
  const creates: Array<Record<string, unknown>> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      creates.push(
        (
          JSON.parse(Buffer.concat(chunks).toString()) as {
            create_request: Record<string, unknown>;
          }
        ).create_request,
      );
      const step = steps[creates.length - 1];
      if (!step) return void res.destroy();
      res.writeHead(200, { 'Content-Type': 'application/json' });
      step(res, req);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = new Client({
    endpoints: [`http://127.0.0.1:${(server.address() as AddressInfo).port}`],
    transport: 'json',
  });
  t.teardown(() => {
    client.close();
    server.closeAllConnections();
    server.close();
  });
  return { client, creates };
}

const until = async (cond: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

t.test('resumes after the last delivered revision, every event once', async (t) => {
  const { client, creates } = await scripted(t, [
    (res) => {
      line(res, { header: header(10), created: true });
      line(res, {
        header: header(11),
        events: [put('p/a', 11), { type: 'DELETE', kv: { key: 'cC9i', mod_revision: '11' } }],
      });
      line(res, { header: header(12), events: [put('p/a', 12)] });
      setTimeout(() => res.socket?.destroy(), 20);
    },
    (res) => {
      line(res, { header: header(12), created: true });
      line(res, { header: header(15) }); // progress: nothing at or below 15 is left
      setTimeout(() => res.end(), 20);
    },
    (res) => {
      line(res, { header: header(15), created: true });
      line(res, {
        header: header(16),
        canceled: true,
        cancel_reason: 'watcher is too slow; resume from 16',
      });
    },
    (res) => {
      line(res, { header: header(15), created: true });
      line(res, { header: header(17), events: [put('p/c', 17)] });
    },
  ]);
  const batches: WatchBatch[] = [];
  const progress: number[] = [];
  const watch = client.watch(
    'p/',
    { prefix: true, prevKv: true, noDelete: false },
    (b) => batches.push(b),
    {
      onProgress: (h) => progress.push(h.revision),
    },
  );
  t.equal(await watch.ready, 10, 'ready with the revision it was created at');
  await until(() => batches.length === 3);
  await watch.close();
  t.same(
    batches.map((b) => b.events.map((e) => `${e.type} ${text(e.kv.key)}@${e.kv.modRevision}`)),
    [['PUT p/a@11', 'DELETE p/b@11'], ['PUT p/a@12'], ['PUT p/c@17']],
  );
  t.same(progress, [15]);
  t.same(
    creates.map((c) => c.start_revision),
    [undefined, 13, 16, 16],
    'from now, then after 12, after the progress at 15, and again after a server cancel',
  );
  t.same(
    creates[0],
    { key: 'cC8=', range_end: 'cDA=', prev_kv: true },
    'the prefix as key and range_end',
  );
  t.equal(watch.reconnects, 3);
});

t.test('a compaction past the next revision ends the watch with ERR_COMPACTED', async (t) => {
  const { client } = await scripted(t, [
    (res) => {
      line(res, { header: header(30), created: true });
      line(res, { header: header(30), canceled: true, compact_revision: '25' });
    },
  ]);
  let failure: unknown;
  const watch = client.watch('k', { startRevision: 5 }, () => undefined, {
    onError: (e) => (failure = e),
  });
  await until(() => failure !== undefined);
  t.ok(isClientError(failure, 'ERR_COMPACTED'));
  t.equal(watch.nextRevision, 5, 'nothing was delivered');
});

t.test('a refused watch request ends the watch', async (t) => {
  const server = createServer((_req, res) => {
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end(
      '{"error":"etcetera: no such API route: /v3/watch","message":"etcetera: no such API route: /v3/watch","code":5}',
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = new Client({
    endpoints: [`http://127.0.0.1:${(server.address() as AddressInfo).port}`],
    transport: 'json',
  });
  t.teardown(() => {
    client.close();
    server.close();
  });
  const watch = client.watch('k', {}, () => undefined);
  const err = await watch.ready.catch((e: unknown) => e);
  t.ok(isClientError(err, 'ERR_ROUTE_NOT_FOUND'));
  t.match(err, { httpStatus: 404 });
  t.equal(watch.reconnects, 0, 'no reconnect loop');
});

t.test('filters go on the wire as etcd names them', async (t) => {
  const { client, creates } = await scripted(t, [
    (res) => line(res, { header: header(1), created: true }),
  ]);
  const watch = client.watch(
    '',
    { fromKey: true, noPut: true, noDelete: true, progressNotify: true },
    () => undefined,
  );
  await watch.ready;
  await watch.close();
  t.same(creates[0], {
    key: 'AA==',
    range_end: 'AA==',
    progress_notify: true,
    filters: ['NOPUT', 'NODELETE'],
  });
});
