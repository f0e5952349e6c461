import { readFileSync } from 'node:fs';
import t from 'tap';
import { ERRORS, EtceteraError, errorCodes, isEtceteraError } from '../src/errors.js';
import { repoPath } from './paths.js';

t.test('every code is documented in docs/errors.md and nothing else is', async (t) => {
  const doc = readFileSync(repoPath('docs', 'errors.md'), 'utf8');
  const documented = new Set([...doc.matchAll(/^\| `(ERR_[A-Z_]+)` \|/gm)].map((m) => m[1]));
  const codes = new Set<string>(errorCodes());
  for (const code of codes) t.ok(documented.has(code), `${code} is documented`);
  for (const code of documented) t.ok(codes.has(code as string), `${code} is in the catalogue`);
});

t.test('an error carries its code, gRPC code, etcd text and details', async (t) => {
  const e = new EtceteraError('ERR_COMPACTED', { compactRevision: 7 });
  t.equal(e.code, 'ERR_COMPACTED');
  t.equal(e.grpcCode, 11);
  t.equal(e.message, 'etcdserver: mvcc: required revision has been compacted');
  t.equal(e.details.compactRevision, 7);
  t.ok(isEtceteraError(e, 'ERR_COMPACTED'));
  t.notOk(isEtceteraError(e, 'ERR_FUTURE_REV'));
  const d = new EtceteraError('ERR_INVALID_ARGUMENT', { detail: 'limit must be >= 0' });
  t.equal(d.message, `${ERRORS.ERR_INVALID_ARGUMENT.message}: limit must be >= 0`);
  t.equal(d.etcdMessage, ERRORS.ERR_INVALID_ARGUMENT.message);
});
