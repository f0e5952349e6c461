/**
 * The https member the TLS tests share: client port on https://127.0.0.1 with the
 * certificate `m1.crt`/`m1.key` and client certificates required, signed by `ca.crt`, all
 * three files in `dir`.
 */
import { join } from 'node:path';
import type { Member } from '../../src/server/member.js';
import { startSingle } from '../server/helpers.js';

export function startTlsMember(dir: string): Promise<Member> {
  return startSingle(join(dir, 'data'), {
    listenClientUrls: 'https://127.0.0.1:0',
    certFile: join(dir, 'm1.crt'),
    keyFile: join(dir, 'm1.key'),
    trustedCaFile: join(dir, 'ca.crt'),
    clientCertAuth: true,
  });
}
