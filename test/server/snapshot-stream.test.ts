/**
 * A large snapshot streams while the member goes on serving: during the stream (between its
 * first and last chunk, the reader pausing briefly after each chunk) puts and gets keep
 * being answered, counted, over gRPC and over the JSON gateway route. The saved file holds
 * the store as it was when the snapshot began: its revision, not the writes made during it.
 * Clients that leave mid-stream leave the member serving (and later snapshots whole).
 */
import { join } from 'node:path';
import t from 'tap';
import { Client } from '../../src/client/index.js';
import { saveSnapshot } from '../../src/client/snapshot.js';
import { snapshotStatus } from '../../src/client/snapshot-status.js';
import { startSingle } from './helpers.js';

const KEYS = 1200;
const VALUE = Buffer.alloc(16 * 1024, 'v');

t.test('writes and reads are served while a large snapshot streams', async (t) => {
  const dir = t.testdir();
  const m = await startSingle(join(dir, 'member'), { maxRequestBytes: 4 * 1024 * 1024 });
  t.teardown(() => m.stop());
  const url = m.clientUrls[0]!.href;
  const loader = new Client({ endpoints: [url] });
  t.teardown(() => loader.close());
  for (let i = 0; i < KEYS; i += 40) {
    await Promise.all(
      Array.from({ length: 40 }, (_, j) =>
        loader.put(`big/${String(i + j).padStart(5, '0')}`, VALUE),
      ),
    );
  }
  t.test('clients that leave mid-stream', async (t) => {
    for (const transport of ['grpc', 'json'] as const) {
      for (let round = 0; round < 3; round++) {
        const c = new Client({ endpoints: [url], transport });
        let n = 0;
        for await (const _chunk of c.snapshot()) if (++n === 5) break;
        c.close();
        t.equal(n, 5, `${transport}: left after 5 chunks`);
      }
    }
    const c = new Client({ endpoints: [url] });
    t.teardown(() => c.close());
    await c.put('after-leaving', 'x');
    t.equal(Buffer.from((await c.get('after-leaving')).kvs[0]!.value).toString(), 'x');
  });
  for (const transport of ['grpc', 'json'] as const) {
    t.test(transport, async (t) => {
      const c = new Client({ endpoints: [url], transport });
      t.teardown(() => c.close());
      const startRevision = (await c.get('x')).header.revision;
      let streaming = false;
      let done = false;
      let chunks = 0;
      async function* slow(): AsyncIterable<Uint8Array> {
        for await (const chunk of c.snapshot()) {
          streaming = true;
          chunks++;
          yield chunk;
          await new Promise((r) => setTimeout(r, 2));
        }
        streaming = false;
        done = true;
      }
      let puts = 0;
      let gets = 0;
      const load = (async () => {
        // From the first chunk on: the snapshot's revision is fixed before anything is sent.
        while (!streaming && !done) await new Promise((r) => setTimeout(r, 1));
        for (let i = 0; !done; i++) {
          await c.put(`during/${transport}/${i}`, 'x');
          if (streaming) puts++;
          await c.get(`big/${String(i % KEYS).padStart(5, '0')}`);
          if (streaming) gets++;
        }
      })();
      const file = join(dir, `${transport}.db`);
      const saved = await saveSnapshot(slow(), file);
      await load;
      t.ok(chunks > 100, `${chunks} chunks, ${saved.size} bytes`);
      t.ok(puts > 0, `${puts} puts answered during the stream`);
      t.ok(gets > 0, `${gets} gets answered during the stream`);
      const status = await snapshotStatus(file);
      t.equal(status.revision, startRevision, 'the snapshot is of the revision it began at');
      t.ok(status.totalKey >= KEYS, `${status.totalKey} keys`);
    });
  }
});
