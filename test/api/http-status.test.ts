/** The one table from error codes to HTTP status (src/api/http-status.ts) stays complete and true. */
import t from 'tap';
import { HTTP_STATUS, HTTP_STATUS_BY_GRPC, httpStatusOf } from '../../src/api/http-status.js';
import { ERRORS, errorCodes } from '../../src/errors.js';
import { STATUS_REASONS } from '../../src/wire/k8s.js';

t.test('every error code has a row', async (t) => {
  for (const code of errorCodes())
    t.ok(HTTP_STATUS[code] !== undefined, `${code} has an HTTP status`);
});

t.test("rows follow the gateway's table, except the ones that say why", async (t) => {
  const kube = new Map<string, number>(Object.values(STATUS_REASONS).map((r) => [r.code, r.http]));
  for (const code of errorCodes()) {
    const row = HTTP_STATUS[code];
    if (code === 'ERR_METHOD_NOT_ALLOWED')
      t.equal(row, 405, 'a wrong method is 405, as etcd answers it');
    else if (code === 'ERR_WATCH_TOO_OLD')
      t.equal(row, 410, "too old for the watch cache is Kubernetes' 410 Gone");
    else if (code === 'ERR_BODY_TIMEOUT')
      t.equal(row, 408, 'a body that did not arrive in time is HTTP 408 Request Timeout');
    else if (kube.has(code))
      t.equal(row, kube.get(code), `${code} agrees with the Status reasons (src/wire/k8s.ts)`);
    else
      t.equal(
        row,
        HTTP_STATUS_BY_GRPC[ERRORS[code].grpc],
        `${code} is the gateway's status for its gRPC code`,
      );
  }
});

t.test('statuses etcd was seen answering with', async (t) => {
  t.equal(httpStatusOf('ERR_LEASE_EXIST'), 412, 'FailedPrecondition');
  t.equal(httpStatusOf('ERR_LEASE_NOT_FOUND'), 404, 'NotFound');
  t.equal(httpStatusOf('ERR_COMPACTED'), 400, 'OutOfRange');
  t.equal(httpStatusOf('ERR_NO_LEADER'), 503, 'Unavailable');
  t.equal(HTTP_STATUS_BY_GRPC[8], 429, 'ResourceExhausted');
});
