/**
 * A gRPC Watch stream whose reader stops reading (grpc-js paused: HTTP/2 flow control stops
 * the member's writes) while a writer writes ~10 MB: the slow watcher is cancelled by the
 * same slow-watcher policy as the JSON stream (a gapless prefix, then canceled with the
 * revision to resume from), a watcher on another connection receives every event in order,
 * and every write is acknowledged.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startSingle, waitFor } from '../../server/helpers.js';
import { b, type Msg, RawClient } from './client.js';

t.test(
  'a stalled gRPC watcher is cancelled with its resume revision; others read on',
  async (t) => {
    const m = await startSingle(mkdtempSync(join(tmpdir(), 'grpc-slow-')));
    const host = m.clientUrls[0]!.host;
    // Three connections: the stalled watcher, the reading watcher, the writer.
    const slowClient = new RawClient(host);
    const readClient = new RawClient(host);
    const writer = new RawClient(host);
    t.teardown(async () => {
      slowClient.close();
      readClient.close();
      writer.close();
      await m.stop();
    });
    const create = { create_request: { key: b('s/'), range_end: b('s0') } };
    const slow = slowClient.watch();
    slow.send(create);
    t.equal((await slow.next()).created, true);
    const reader = readClient.watch();
    reader.send(create);
    t.equal((await reader.next()).created, true);
    t.equal(m.watchCache!.stats().watchers, 2);
    const base = (await writer.call('/etcdserverpb.KV/Range', { key: b('s/') })).header
      .revision as number;

    slow.call.pause(); // the reader stops reading: grpc-js stops, HTTP/2's window closes

    const value = b('v'.repeat(16_000));
    const writes = 640;
    // Read the other stream as it comes, so it is never slow itself.
    const seen: number[] = [];
    let readerFailed: unknown;
    const reading = (async () => {
      try {
        while (seen.length < writes) {
          const r = await reader.next(60_000);
          for (const e of (r.events as Msg[] | undefined) ?? []) seen.push(e.kv.mod_revision);
        }
      } catch (e) {
        readerFailed = e;
      }
    })();

    const acked: number[] = [];
    for (let i = 0; i < writes; i += 16) {
      const batch = await Promise.all(
        Array.from({ length: 16 }, (_, j) =>
          writer.call('/etcdserverpb.KV/Put', { key: b(`s/${(i + j) % 10}`), value }),
        ),
      );
      for (const r of batch) acked.push(r.header.revision as number);
    }
    t.equal(acked.length, writes, 'every write acknowledged');
    await reading;
    t.equal(readerFailed, undefined, 'the reading watcher did not fail');
    t.same(
      seen,
      Array.from({ length: writes }, (_, i) => base + 1 + i),
      'the reading watcher got every event, in order',
    );
    await waitFor(
      'the stalled watcher to be cancelled',
      () => m.watchCache!.stats().watchers === 1,
      30_000,
    );
    t.equal(m.watchCache!.stats().watchers, 1, 'the stalled watcher was cancelled');

    slow.call.resume();
    const got = await slow.until((r) => r.canceled === true, 30_000);
    const cancel = got.at(-1)!;
    const match = /resume from revision (\d+)/.exec(cancel.cancel_reason ?? '');
    t.ok(match, `cancel_reason: ${cancel.cancel_reason}`);
    const resume = Number(match![1]);
    const revisions = got
      .slice(0, -1)
      .flatMap((r) => ((r.events as Msg[] | undefined) ?? []).map((e) => e.kv.mod_revision));
    t.same(
      revisions,
      Array.from({ length: revisions.length }, (_, i) => base + 1 + i),
      'what the stalled watcher got is a gapless prefix',
    );
    t.ok(revisions.length < writes, `it got ${revisions.length} of ${writes} events`);
    t.equal(resume, base + 1 + revisions.length, 'it resumes right after what it got');
    t.equal(cancel.header.revision, resume - 1, 'the cancel header says all before was sent');

    // The resume revision is enough to carry on: a new watch from it sees the rest.
    const again = slowClient.watch();
    again.send({ create_request: { ...create.create_request, start_revision: resume } });
    t.equal((await again.next()).created, true);
    const rest: number[] = [];
    while (rest.length < writes - revisions.length) {
      const r = await again.next(30_000);
      for (const e of (r.events as Msg[] | undefined) ?? []) rest.push(e.kv.mod_revision);
    }
    t.same(
      rest,
      Array.from({ length: rest.length }, (_, i) => resume + i),
      'resumed without a gap',
    );
    again.end();
  },
);
