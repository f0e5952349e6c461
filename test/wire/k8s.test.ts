/**
 * The one table of Kubernetes Status reasons (src/wire/k8s.ts): the server's Status errors
 * and the client's reading of an answer both follow it, and a bare HTTP code (an answer that
 * is not a Status) stands for the reason Kubernetes means by it.
 */
import t from 'tap';
import { errorFromResponse, KubeApiError } from '../../src/client/k8s/errors.js';
import { ERRORS } from '../../src/errors.js';
import { StatusError } from '../../src/k8s/status.js';
import { reasonOfHttpCode, STATUS_REASONS, type StatusReason } from '../../src/wire/k8s.js';

const reasons = Object.keys(STATUS_REASONS) as StatusReason[];

t.test('every catalogue code of the table is in the catalogue', async (t) => {
  for (const reason of reasons) {
    const { code } = STATUS_REASONS[reason];
    t.ok(Object.hasOwn(ERRORS, code), `${reason}: ${code} is in src/errors.ts`);
  }
});

t.test('the server sends, and the client reads, each reason with the table row', async (t) => {
  for (const reason of reasons) {
    const row = STATUS_REASONS[reason];
    const sent = new StatusError(reason, `a ${reason}`);
    t.equal(sent.status.code, row.http, `${reason}: HTTP ${row.http}`);
    t.equal(sent.code, row.code, `${reason}: ${row.code} on the server`);
    const read = errorFromResponse(sent.status.code, JSON.stringify(sent.status));
    t.equal(read.code, row.code, `${reason}: ${row.code} in the client`);
    t.equal(read.statusCode, row.http);
  }
});

t.test('a bare HTTP code means one reason', async (t) => {
  t.equal(reasonOfHttpCode(409), 'Conflict', '409 is Conflict (AlreadyExists shares it)');
  t.equal(reasonOfHttpCode(410), 'Expired', '410 is Expired (Gone shares it)');
  t.equal(reasonOfHttpCode(401), 'Unauthorized');
  t.equal(reasonOfHttpCode(418), undefined);
  const cases: [number, string][] = [
    [400, 'ERR_KUBE_BAD_REQUEST'],
    [404, 'ERR_KUBE_NOT_FOUND'],
    [409, 'ERR_KUBE_CONFLICT'],
    [410, 'ERR_KUBE_EXPIRED'],
    [413, 'ERR_KUBE_REQUEST_TOO_LARGE'],
    [503, 'ERR_KUBE_UNAVAILABLE'],
    [401, 'ERR_KUBE_UNAUTHORIZED'],
    [418, 'ERR_KUBE_INTERNAL'],
    [502, 'ERR_KUBE_INTERNAL'],
  ];
  for (const [http, code] of cases) {
    t.equal(errorFromResponse(http, 'not json').code, code, `HTTP ${http} without a Status`);
  }
  const unknownReason = new KubeApiError(413, { kind: 'Status', apiVersion: 'v1', reason: 'Odd' });
  t.equal(
    unknownReason.code,
    'ERR_KUBE_REQUEST_TOO_LARGE',
    'an unknown reason falls back to the code',
  );
  const gone = new KubeApiError(410, { kind: 'Status', apiVersion: 'v1', reason: 'Gone' });
  t.ok(gone.expired && gone.code === 'ERR_KUBE_EXPIRED', 'Gone is an expiry');
});
