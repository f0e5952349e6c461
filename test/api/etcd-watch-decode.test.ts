/**
 * One decoder for a watch create on both faces (src/api/etcd/decode.ts): a WatchCreateRequest
 * written as the JSON stream's text (proto or JSON field names, int64 as numbers or strings,
 * filters by name or number, bytes in base64) and the same request as protobuf bytes (what a
 * gRPC Watch stream carries, decoded as src/api/grpc does) become the same session request,
 * for any field values; a negative start revision is refused on both.
 */

import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import t from 'tap';
import { decodeWatchCreate } from '../../src/api/etcd/decode.js';
import { decodeWatchRequest } from '../../src/api/etcd/watch/decode.js';
import { decodeRequest } from '../../src/api/grpc/codec.js';
import { isEtceteraError } from '../../src/errors.js';
import { etcdProto } from '../../src/wire/proto/index.js';

const FILTERS = ['NOPUT', 'NODELETE'] as const;
const requestType = etcdProto().type('etcdserverpb.WatchRequest');

interface Create {
  key: Uint8Array;
  rangeEnd: Uint8Array;
  startRevision: number;
  progressNotify: boolean;
  filters: number[];
  prevKv: boolean;
  watchId: number;
  fragment: boolean;
}

const create: fc.Arbitrary<Create> = fc.record({
  key: fc.uint8Array({ maxLength: 12 }),
  rangeEnd: fc.uint8Array({ maxLength: 12 }),
  startRevision: fc.oneof(fc.constant(0), fc.maxSafeNat()),
  progressNotify: fc.boolean(),
  filters: fc.array(fc.integer({ min: 0, max: 1 }), { maxLength: 3 }),
  prevKv: fc.boolean(),
  watchId: fc.oneof(fc.constant(0), fc.integer({ min: -(2 ** 31), max: 2 ** 31 })),
  fragment: fc.boolean(),
});

/** How the JSON text spells each field: proto or JSON name, string or number, name or number. */
interface Spelling {
  jsonNames: boolean;
  intsAsStrings: boolean;
  filtersByName: boolean;
}

const spelling: fc.Arbitrary<Spelling> = fc.record({
  jsonNames: fc.boolean(),
  intsAsStrings: fc.boolean(),
  filtersByName: fc.boolean(),
});

/** Bytes compared by content (protobuf hands out Buffers, base64 decoding Uint8Array views). */
function normalise(r: object): unknown {
  return Object.fromEntries(
    Object.entries(r).map(([k, v]) => [k, v instanceof Uint8Array ? [...v] : v]),
  );
}

const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');

function jsonText(c: Create, s: Spelling): string {
  const name = (proto: string, json: string) => (s.jsonNames ? json : proto);
  const int = (n: number) => (s.intsAsStrings ? String(n) : n);
  const body: Record<string, unknown> = {
    key: b64(c.key),
    [name('range_end', 'rangeEnd')]: b64(c.rangeEnd),
    [name('start_revision', 'startRevision')]: int(c.startRevision),
    [name('progress_notify', 'progressNotify')]: c.progressNotify,
    filters: c.filters.map((f) => (s.filtersByName ? FILTERS[f] : f)),
    [name('prev_kv', 'prevKv')]: c.prevKv,
    [name('watch_id', 'watchId')]: int(c.watchId),
    fragment: c.fragment,
  };
  return JSON.stringify({ [name('create_request', 'createRequest')]: body });
}

function protobufCreate(c: Create) {
  const message = requestType.fromObject({
    create_request: {
      key: c.key,
      range_end: c.rangeEnd,
      start_revision: c.startRevision,
      progress_notify: c.progressNotify,
      filters: c.filters,
      prev_kv: c.prevKv,
      watch_id: c.watchId,
      fragment: c.fragment,
    },
  });
  const decoded = decodeRequest(requestType, requestType.encode(message).finish());
  return decodeWatchCreate(decoded.create_request, 'create_request', 'protobuf');
}

t.test('the JSON text and the protobuf bytes of a create decode alike', async (t) => {
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(create, spelling, (c, s) => {
          const fromJson = decodeWatchRequest(jsonText(c, s));
          const fromProtobuf = protobufCreate(c);
          const expected = {
            key: c.key,
            rangeEnd: c.rangeEnd.length === 0 ? undefined : c.rangeEnd,
            startRevision: c.startRevision,
            progressNotify: c.progressNotify,
            filters: c.filters.map((f) => FILTERS[f]),
            prevKv: c.prevKv,
            watchId: c.watchId,
            fragment: c.fragment,
          };
          return (
            fromJson.type === 'create' &&
            isDeepStrictEqual(normalise(fromJson.create), normalise(fromProtobuf)) &&
            isDeepStrictEqual(normalise(fromProtobuf), normalise(expected))
          );
        }),
        { numRuns: 300 },
      ),
    'both faces build the request the fields say',
  );
});

t.test('a negative start revision is refused on both faces', async (t) => {
  const refused = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return isEtceteraError(e, 'ERR_BAD_FIELD') && /must not be negative/.test(String(e));
    }
    return false;
  };
  const c: Create = {
    key: Uint8Array.of(0x61),
    rangeEnd: new Uint8Array(0),
    startRevision: -5,
    progressNotify: false,
    filters: [],
    prevKv: false,
    watchId: 0,
    fragment: false,
  };
  t.ok(
    refused(() =>
      decodeWatchRequest(
        jsonText(c, { jsonNames: false, intsAsStrings: true, filtersByName: true }),
      ),
    ),
    'the JSON stream refuses it',
  );
  t.ok(
    refused(() => protobufCreate(c)),
    'the gRPC stream refuses it',
  );
});
