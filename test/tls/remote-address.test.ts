/**
 * An https client's address reaches what names it: the client port reads the first bytes of
 * a connection itself (to tell TLS from plaintext) before node:tls takes the connection, and
 * the TLS socket must still tell the client's address. Shown by the audit log
 * (`--audit-log-path`), whose sourceIPs name 127.0.0.1 for a write over https.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import t from 'tap';
import { createCa, issue } from '../../src/server/certs.js';
import { startSingle, waitFor } from '../server/helpers.js';

t.test('the audit log names 127.0.0.1 for a write over https', async (t) => {
  const dir = t.testdir();
  const ca = await createCa('client CA');
  const server = await issue(ca, { commonName: 'm1', hosts: ['127.0.0.1'], usage: 'server' });
  writeFileSync(join(dir, 'm1.crt'), server.cert);
  writeFileSync(join(dir, 'm1.key'), server.key);
  const audit = join(dir, 'audit.log');
  const m = await startSingle(join(dir, 'data'), {
    listenClientUrls: 'https://127.0.0.1:0',
    certFile: join(dir, 'm1.crt'),
    keyFile: join(dir, 'm1.key'),
    auditLogPath: audit,
  });
  t.teardown(() => m.stop());
  const url = new URL('/api/v1/namespaces/default/configmaps', m.clientUrls[0]!);
  t.equal(url.protocol, 'https:');
  const body = JSON.stringify({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'over-https' },
    data: { a: '1' },
  });
  const status = await new Promise<number>((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', ca: ca.cert, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  t.equal(status, 201, 'the ConfigMap was created over https');
  let event: { sourceIPs?: string[]; objectRef?: { name?: string } } | undefined;
  await waitFor(
    'the audit event',
    () => {
      const lines = readFileSync(audit, 'utf8')
        .split('\n')
        .filter((l) => l.length > 0);
      event = lines
        .map((l) => JSON.parse(l) as typeof event)
        .find((e) => e?.objectRef?.name === 'over-https');
      return event !== undefined;
    },
    10_000,
  );
  t.same(event?.sourceIPs, ['127.0.0.1'], 'sourceIPs name the client');
});
