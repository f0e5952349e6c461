/**
 * The query parameters of list and watch (ListOptions), checked as Kubernetes checks them,
 * and continue tokens: an opaque base64url of the list's revision and the last key sent.
 */
import { invalidObject } from '../../k8s/errors.js';
import { forbidden, notSupported } from '../../k8s/field-errors.js';
import { badRequest, StatusError } from '../../k8s/status.js';

export interface ListOptions {
  watch: boolean;
  /** '' (absent), '0', or decimal digits. */
  resourceVersion: string;
  resourceVersionMatch: '' | 'NotOlderThan' | 'Exact';
  limit: number;
  continueToken: ContinueToken | undefined;
  labelSelector: string;
  fieldSelector: string;
  allowWatchBookmarks: boolean;
  sendInitialEvents: boolean | undefined;
  timeoutSeconds: number | undefined;
}

export interface ContinueToken {
  /** The revision every page of the list is read at. */
  rv: number;
  /** The last key of the previous page. */
  start: string;
}

export function encodeContinue(t: ContinueToken): string {
  return Buffer.from(JSON.stringify({ v: 1, rv: t.rv, start: t.start })).toString('base64url');
}

export function decodeContinue(token: string): ContinueToken {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw badRequest('continue key is not valid: the token could not be decoded');
  }
  const t = parsed as { v?: unknown; rv?: unknown; start?: unknown };
  if (
    t?.v !== 1 ||
    typeof t.rv !== 'number' ||
    !Number.isSafeInteger(t.rv) ||
    t.rv < 1 ||
    typeof t.start !== 'string'
  ) {
    throw badRequest(
      'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
    );
  }
  return { rv: t.rv, start: t.start };
}

/**
 * A boolean query parameter as kube-apiserver's query conversion reads it: absent is unset,
 * `0` and any case of `false` are false, and every other value (`true`, `True`, `1`, even
 * an empty one) is true. The Python client sends `watch=True`.
 */
function bool(q: URLSearchParams, name: string): boolean | undefined {
  const v = q.get(name);
  if (v === null) return undefined;
  return !(v === '0' || v.toLowerCase() === 'false');
}

function nonNegativeInt(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (!/^\d{1,15}$/.test(v)) throw badRequest(`invalid value for ${name}: ${JSON.stringify(v)}`);
  return Number(v);
}

function listOptionsInvalid(errors: ReturnType<typeof forbidden>[]): never {
  throw invalidObject('meta.k8s.io', 'ListOptions', '', errors);
}

export function parseListOptions(q: URLSearchParams): ListOptions {
  const resourceVersion = q.get('resourceVersion') ?? '';
  if (resourceVersion !== '' && !/^\d{1,15}$/.test(resourceVersion)) {
    throw badRequest(`invalid resource version: ${JSON.stringify(resourceVersion)}`);
  }
  const match = q.get('resourceVersionMatch') ?? '';
  if (match !== '' && match !== 'NotOlderThan' && match !== 'Exact') {
    listOptionsInvalid([
      notSupported('resourceVersionMatch', match, ['Exact', 'NotOlderThan', '']),
    ]);
  }
  const cont = q.get('continue') ?? '';
  const o: ListOptions = {
    watch: bool(q, 'watch') ?? false,
    resourceVersion,
    resourceVersionMatch: match as ListOptions['resourceVersionMatch'],
    limit: nonNegativeInt(q, 'limit') ?? 0,
    continueToken: cont ? decodeContinue(cont) : undefined,
    labelSelector: q.get('labelSelector') ?? '',
    fieldSelector: q.get('fieldSelector') ?? '',
    allowWatchBookmarks: bool(q, 'allowWatchBookmarks') ?? false,
    sendInitialEvents: bool(q, 'sendInitialEvents'),
    timeoutSeconds: nonNegativeInt(q, 'timeoutSeconds'),
  };
  checkCombinations(o);
  return o;
}

/** Kubernetes' ValidateListOptions: which parameters may go together. */
function checkCombinations(o: ListOptions): void {
  const errs: ReturnType<typeof forbidden>[] = [];
  if (o.sendInitialEvents !== undefined) {
    if (!o.watch)
      errs.push(forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
    if (o.resourceVersionMatch !== 'NotOlderThan') {
      errs.push(
        forbidden(
          'resourceVersionMatch',
          'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
        ),
      );
    }
    if (!o.allowWatchBookmarks && o.sendInitialEvents) {
      errs.push(
        forbidden(
          'allowWatchBookmarks',
          'sendInitialEvents requires setting allowWatchBookmarks to true',
        ),
      );
    }
  } else if (o.watch && o.resourceVersionMatch !== '') {
    errs.push(
      forbidden(
        'resourceVersionMatch',
        'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
      ),
    );
  }
  if (!o.watch && o.resourceVersionMatch !== '') {
    if (o.resourceVersion === '') {
      errs.push(
        forbidden(
          'resourceVersionMatch',
          'resourceVersionMatch is forbidden unless resourceVersion is provided',
        ),
      );
    }
    if (o.continueToken) {
      errs.push(
        forbidden(
          'resourceVersionMatch',
          'resourceVersionMatch is forbidden when continue is provided',
        ),
      );
    }
    if (o.resourceVersionMatch === 'Exact' && o.resourceVersion === '0') {
      errs.push(
        forbidden(
          'resourceVersionMatch',
          'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        ),
      );
    }
  }
  if (errs.length > 0) listOptionsInvalid(errs);
  if (o.continueToken && o.resourceVersion !== '' && o.resourceVersion !== '0') {
    throw badRequest('specifying resource version is not allowed when using continue');
  }
  if (o.watch && o.continueToken) throw badRequest('continue is not supported for watch');
}

export function tooLargeResourceVersion(): StatusError {
  return new StatusError('Timeout', 'Too large resource version', {
    causes: [
      { reason: 'ResourceVersionTooLarge', message: 'Too large resource version', field: '' },
    ],
    retryAfterSeconds: 1,
  });
}
