/**
 * Service clusterIP allocation on the Kubernetes face's write path (a face over a real
 * store, no control plane): an address from the range for a Service without one, a
 * requested one checked (outside the range, the reserved first addresses, taken: 422 with
 * Kubernetes' texts and nothing stored), headless and ExternalName Services untouched, the
 * address immutable on update and kept by a replace that leaves it out, given on the update
 * that turns an ExternalName Service into a ClusterIP one, freed by a delete,
 * "range is full" when none is left; concurrent creates through two faces over one store
 * (two API servers) never share an address; after a restart the stored Services' addresses
 * stay taken; the flag's default and a bad range. A fast-check property holds the picking rule against a set model.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import fc from 'fast-check';
import t from 'tap';
import { mountKubernetes } from '../../src/api/k8s/index.js';
import { KubeClient } from '../../src/client/k8s/client.js';
import { isKubeApiError } from '../../src/client/k8s/errors.js';
import { type KubeObject, Resources } from '../../src/client/k8s/types.js';
import { pickFree } from '../../src/k8s/service-ips.js';
import { resolveConfig } from '../../src/server/config.js';
import { parseServeArgs, SERVE_USAGE } from '../../src/server/flags.js';
import { addressAt, ipNumber, parseCidr } from '../../src/wire/cidr.js';
import { startKube } from './harness.js';

// 16 addresses: .0 (network) and .1 (the kubernetes Service's) and .15 (broadcast) are
// never handed out, which leaves 13.
const RANGE = '10.0.0.0/28';
const FREE = 13;

type Svc = KubeObject & { spec: { clusterIP?: string; clusterIPs?: string[]; type?: string } };

const svc = (name: string, spec: Record<string, unknown> = {}) => ({
  metadata: { name },
  spec: { ports: [{ port: 80 }], selector: { app: name }, ...spec },
});

async function rejection(p: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await p;
  } catch (e) {
    if (isKubeApiError(e)) return { code: e.statusCode, message: e.status.message ?? '' };
    throw e;
  }
  throw new Error('the request succeeded');
}

t.test('clusterIP allocation', async (t) => {
  const dir = t.testdir();
  const srv = await startKube(dir, { serviceClusterIpRange: RANGE });
  t.teardown(() => srv.close());
  const client = new KubeClient({ baseUrl: srv.url });
  const services = client.resource<Svc>(Resources.services, 'default');
  const inRange = (ip: string | undefined) => {
    const n = ipNumber(ip ?? '');
    return (
      n !== undefined &&
      n >= (ipNumber('10.0.0.2') as number) &&
      n <= (ipNumber('10.0.0.14') as number)
    );
  };

  await t.test('a Service without a clusterIP gets one from the range', async (t) => {
    const a = await services.create(svc('a'));
    t.ok(inRange(a.spec.clusterIP), `allocated ${a.spec.clusterIP}`);
    t.same(a.spec.clusterIPs, [a.spec.clusterIP]);
    const b = await services.create(svc('b', { clusterIP: '' }));
    t.ok(inRange(b.spec.clusterIP), 'clusterIP "" is allocated too');
    t.not(b.spec.clusterIP, a.spec.clusterIP);
    const lb = await services.create(svc('lb', { type: 'LoadBalancer' }));
    t.ok(inRange(lb.spec.clusterIP), 'LoadBalancer Services get one');
    t.equal((await services.get('a')).spec.clusterIP, a.spec.clusterIP, 'stored');
  });

  await t.test('headless and ExternalName Services are left alone', async (t) => {
    const h = await services.create(svc('headless', { clusterIP: 'None' }));
    t.equal(h.spec.clusterIP, 'None');
    const x = await services.create({
      metadata: { name: 'ext' },
      spec: { type: 'ExternalName', externalName: 'example.com' },
    });
    t.equal(x.spec.clusterIP, undefined);
  });

  await t.test('a requested clusterIP is checked', async (t) => {
    const held = new Set((await services.list()).items.map((s) => s.spec.clusterIP));
    const free = ['10.0.0.14', '10.0.0.13', '10.0.0.12', '10.0.0.11'].find((ip) => !held.has(ip));
    const given = await services.create(svc('given', { clusterIP: free }));
    t.equal(given.spec.clusterIP, free, 'a free address in the range is kept');
    const before = await srv.raw();
    const taken = await rejection(services.create(svc('dup', { clusterIP: free })));
    t.equal(taken.code, 422);
    t.equal(
      taken.message,
      `Service "dup" is invalid: spec.clusterIPs: Invalid value: []string{"${free}"}: failed to allocate IP ${free}: provided IP is already allocated`,
    );
    const outside = await rejection(services.create(svc('out', { clusterIP: '10.1.0.5' })));
    t.equal(outside.code, 422);
    t.equal(
      outside.message,
      'Service "out" is invalid: spec.clusterIPs: Invalid value: []string{"10.1.0.5"}: failed to allocate IP 10.1.0.5: the provided IP (10.1.0.5) is not in the valid range. The range of valid IPs is 10.0.0.0/28',
    );
    for (const ip of ['10.0.0.0', '10.0.0.1', '10.0.0.15']) {
      const r = await rejection(services.create(svc(`r${ip.split('.')[3]}`, { clusterIP: ip })));
      t.equal(r.code, 422, `${ip} is never handed out`);
      t.match(r.message, /is not in the valid range/);
    }
    t.same(await srv.raw(), before, 'the refused creates stored nothing');
  });

  await t.test('the clusterIP is immutable; a replace without it keeps it', async (t) => {
    const a = await services.get('a');
    const ip = a.spec.clusterIP as string;
    const other = ip === '10.0.0.2' ? '10.0.0.3' : '10.0.0.2';
    const r = await rejection(services.patch('a', { spec: { clusterIP: other } }, 'merge'));
    t.equal(r.code, 422);
    t.match(r.message, /spec\.clusterIPs\[0\]: Invalid value: .*may not change once set/);
    const { clusterIP: _ip, clusterIPs: _ips, ...rest } = a.spec;
    const replaced = await services.update({ ...a, spec: rest });
    t.equal(replaced.spec.clusterIP, ip, 'carried over from the stored Service');
    t.equal((await services.get('a')).spec.clusterIP, ip);
  });

  await t.test('an ExternalName Service turned into a ClusterIP one gets an address', async (t) => {
    const ext = { type: 'ExternalName', externalName: 'example.com' };
    await services.create({ metadata: { name: 'ext2' }, spec: ext });
    const turned = await services.patch(
      'ext2',
      { spec: { type: 'ClusterIP', externalName: null, ports: [{ port: 80 }] } },
      'merge',
    );
    t.ok(inRange(turned.spec.clusterIP), `allocated ${turned.spec.clusterIP} on the update`);
    t.same(turned.spec.clusterIPs, [turned.spec.clusterIP]);
    const held = new Set((await services.list()).items.map((s) => s.spec.clusterIP));
    t.equal(
      [...held].filter((ip) => ip === turned.spec.clusterIP).length,
      1,
      'an address no other Service holds',
    );
    t.equal((await services.get('ext2')).spec.clusterIP, turned.spec.clusterIP, 'stored');

    // A requested address is checked as on create: taken → 422 and nothing changes.
    await services.create({ metadata: { name: 'ext3' }, spec: ext });
    const before = await services.get('ext3');
    const taken = await rejection(
      services.patch(
        'ext3',
        { spec: { type: 'ClusterIP', externalName: null, clusterIP: turned.spec.clusterIP } },
        'merge',
      ),
    );
    t.equal(taken.code, 422);
    t.match(taken.message, /failed to allocate IP .*: provided IP is already allocated/);
    t.same(await services.get('ext3'), before, 'the refused update changed nothing');
    const free = ['10.0.0.14', '10.0.0.13', '10.0.0.12', '10.0.0.11', '10.0.0.10'].find(
      (ip) => !held.has(ip),
    );
    const given = await services.patch(
      'ext3',
      { spec: { type: 'ClusterIP', externalName: null, clusterIP: free, ports: [{ port: 80 }] } },
      'merge',
    );
    t.equal(given.spec.clusterIP, free, 'a free requested address is kept');
    for (const n of ['ext2', 'ext3']) await services.delete(n);
  });

  await t.test('full range, and a delete frees the address', async (t) => {
    const held = new Set(
      (await services.list()).items.map((s) => s.spec.clusterIP).filter(inRange),
    );
    let i = 0;
    while (held.size < FREE) {
      const s = await services.create(svc(`fill${i++}`));
      t.notOk(held.has(s.spec.clusterIP as string), 'never an address already held');
      held.add(s.spec.clusterIP as string);
    }
    const full = await rejection(services.create(svc('one-too-many')));
    t.equal(full.code, 500);
    t.match(full.message, /failed to allocate a serviceIP: range is full/);
    const freed = (await services.get('b')).spec.clusterIP;
    await services.delete('b');
    const again = await services.create(svc('again'));
    t.equal(again.spec.clusterIP, freed, 'the freed address is the only one left');
    // Emptied for the next subtest.
    for (const s of (await services.list()).items) await services.delete(s.metadata.name as string);
  });

  await t.test(
    'concurrent creates through two faces over one store never share an address',
    async (t) => {
      // A second API server over the same store, as a second member would be: its creates
      // are not queued behind the first face's, so only the store's compare keeps them apart.
      const app = express();
      const face = mountKubernetes(app, srv.member, { serviceClusterIpRange: RANGE });
      const server = createServer(app);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      t.teardown(async () => {
        await face.close();
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
      });
      await face.ready;
      const second = new KubeClient({
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      }).resource<Svc>(Resources.services, 'default');
      const made = await Promise.all(
        Array.from({ length: FREE }, (_, k) =>
          (k % 2 === 0 ? services : second).create(svc(`c${k}`)),
        ),
      );
      const ips = made.map((s) => s.spec.clusterIP);
      t.equal(new Set(ips).size, FREE, `${FREE} creates, ${FREE} distinct addresses`);
      t.ok(ips.every(inRange));
    },
  );

  await t.test('after a restart the stored Services keep their addresses', async (t) => {
    const before = (await services.list()).items;
    await services.delete(before[0]?.metadata.name as string);
    const freed = before[0]?.spec.clusterIP;
    await srv.close();
    const again = await startKube(dir, { serviceClusterIpRange: RANGE });
    t.teardown(() => again.close());
    const after = new KubeClient({ baseUrl: again.url }).resource<Svc>(
      Resources.services,
      'default',
    );
    const s = await after.create(svc('after-restart'));
    t.equal(s.spec.clusterIP, freed, 'the one address not held by a stored Service');
    const full = await rejection(after.create(svc('no-room')));
    t.equal(full.code, 500);
  });
});

t.test('pickFree: a free, allocatable address, or full (fast-check, set model)', async (t) => {
  const range = parseCidr('10.9.0.0/28');
  const usable = Array.from({ length: 13 }, (_, k) => addressAt(range, k + 2));
  fc.assert(
    fc.property(
      fc.subarray(usable),
      fc.double({ min: 0, max: 0.999999, noNaN: true }),
      (held, r) => {
        const taken = new Set(held);
        if (taken.size === usable.length) {
          try {
            pickFree(range, taken, () => r);
            return false;
          } catch (e) {
            return /range is full/.test((e as Error).message);
          }
        }
        const ip = pickFree(range, taken, () => r);
        return usable.includes(ip) && !taken.has(ip);
      },
    ),
  );
  t.pass('property held');
});

t.test('--service-cluster-ip-range: default 10.96.0.0/12, a bad range refused', async (t) => {
  const cfg = (args: string[]) => resolveConfig(parseServeArgs(args, {}));
  t.equal(cfg([]).serviceClusterIpRange, '10.96.0.0/12');
  t.equal(
    cfg(['--service-cluster-ip-range', '10.100.0.0/16']).serviceClusterIpRange,
    '10.100.0.0/16',
  );
  t.throws(() => cfg(['--service-cluster-ip-range', 'nope']), {
    code: 'ERR_INVALID_ARGUMENT',
    message: /--service-cluster-ip-range: "nope" is not a CIDR/,
  });
  t.match(SERVE_USAGE, /--service-cluster-ip-range/);
});
