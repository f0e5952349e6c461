/**
 * A Watch stream whose client half-closes (ends its send side) is served on as etcd serves
 * it: the answers to requests already sent are all written, and events keep coming on the
 * open watches until the client cancels the call. The same scenario runs against the real
 * etcd when it is installed, over grpc-js on real sockets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import grpc from '@grpc/grpc-js';
import t, { type Test } from 'tap';
import { startSingle } from '../../server/helpers.js';
import { etcdUnavailable, startEtcd } from '../servers.js';
import { b, RawClient, s } from './client.js';

const PUT = '/etcdserverpb.KV/Put';

async function halfClosed(t: Test, host: string): Promise<void> {
  const c = new RawClient(host);
  t.teardown(() => c.close());
  const w = c.watch();
  let status: grpc.StatusObject | undefined;
  w.call.on('status', (st) => {
    status = st;
  });
  // Three creates, then the half-close at once: none of their answers is written yet.
  for (let i = 0; i < 3; i++)
    w.send({ create_request: { key: b(`hc/${i}`), range_end: b(`hc/${i}0`) } });
  w.halfClose();
  const created = [await w.next(), await w.next(), await w.next()];
  t.same(
    created.map((r) => [r.created, r.canceled ?? false, r.watch_id ?? 0]),
    [
      [true, false, 0],
      [true, false, 1],
      [true, false, 2],
    ],
    'every create sent before the half-close is answered',
  );
  for (let i = 0; i < 3; i++) {
    await c.call(PUT, { key: b(`hc/${i}/k`), value: b(`after-${i}`) });
    const ev = await w.next();
    t.equal(ev.watch_id ?? 0, i, `watch ${i} gets its event after the half-close`);
    t.equal(s(ev.events[0].kv.value), `after-${i}`);
  }
  t.equal(status, undefined, 'the stream is still open');
  w.end();
  await t.rejects(w.next(), { code: grpc.status.CANCELLED }, 'until the client cancels it');
}

t.test('etcetera', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'grpc-half-close-'));
  const m = await startSingle(dir);
  t.teardown(async () => {
    await m.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  await halfClosed(t, m.clientUrls[0]!.host);
});

t.test('etcd', { skip: etcdUnavailable() ?? false }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'grpc-half-close-etcd-'));
  const e = await startEtcd(dir);
  t.teardown(async () => {
    await e.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await halfClosed(t, new URL(e.url).host);
});
