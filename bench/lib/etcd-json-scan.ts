/**
 * A lean reader of etcd's JSON watch responses (`{"result":{...}}`, as the gateway and
 * etcetera's /v3/watch send them) for a load generator: it finds the few fields it needs by
 * byte search in the raw message, and never parses JSON or decodes a whole base64 value.
 *
 * Why this is safe: keys and values are base64 (no quotes or braces inside), and the other
 * fields are numbers as strings, so a field's `"name":` pattern cannot occur inside another
 * field's text. Field order is protobuf's (header, watch_id, created, canceled,
 * compact_revision, cancel_reason, fragment, events), and in an event's kv mod_revision comes
 * before value.
 */
import type { EventVisitor, WatchResponseInfo } from './etcd-proto.js';

const EVENTS = Buffer.from('"events":[');
const WATCH_ID = Buffer.from('"watch_id":"');
const CREATED = Buffer.from('"created":true');
const CANCELED = Buffer.from('"canceled":true');
const COMPACT = Buffer.from('"compact_revision":"');
const REASON = Buffer.from('"cancel_reason":"');
const HEADER_REV = Buffer.from('"revision":"');
const MOD_REV = Buffer.from('"mod_revision":"');
const VALUE = Buffer.from('"value":"');
const QUOTE = 0x22;

/** Decimal digits (optionally after '-') from `at` up to the closing quote. */
function numberAt(buf: Buffer, at: number): number {
  let neg = false;
  if (buf[at] === 0x2d) {
    neg = true;
    at++;
  }
  let n = 0;
  for (let c = buf[at]!; c >= 0x30 && c <= 0x39; c = buf[++at]!) n = n * 10 + (c - 0x30);
  return neg ? -n : n;
}

const B64 = new Int8Array(256).fill(-1);
for (const [i, ch] of [
  ...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/',
].entries())
  B64[ch.charCodeAt(0)] = i;
// Padding decodes as zero bits: an 8-byte value ends its third group with one '='.
B64['='.charCodeAt(0)] = 0;
const stampBytes = Buffer.alloc(9);

/** The first 8 bytes of a base64 value at `at`, read as a big-endian double; NaN if shorter. */
function stampAt(buf: Buffer, at: number): number {
  // 12 base64 characters carry 9 bytes, enough for the 8-byte stamp.
  for (let g = 0; g < 3; g++) {
    let bits = 0;
    for (let k = 0; k < 4; k++) {
      const v = B64[buf[at + g * 4 + k]!]!;
      if (v < 0) return Number.NaN;
      bits = (bits << 6) | v;
    }
    stampBytes[g * 3] = bits >>> 16;
    stampBytes[g * 3 + 1] = (bits >>> 8) & 0xff;
    stampBytes[g * 3 + 2] = bits & 0xff;
  }
  return stampBytes.readDoubleBE(0);
}

/**
 * Scans one response in `buf[start, end)`. Fills `info` and hands each event's mod_revision and
 * value stamp to `visit`, in order.
 */
export function scanJsonWatchResponse(
  whole: Buffer,
  info: WatchResponseInfo,
  visit: EventVisitor,
): void {
  info.watchId = 0;
  info.headerRevision = 0;
  info.created = false;
  info.canceled = false;
  info.compactRevision = 0;
  info.cancelReason = '';
  info.events = 0;
  const eventsAt = whole.indexOf(EVENTS);
  // Everything but events lies before them; search only that part.
  const head = eventsAt < 0 ? whole : whole.subarray(0, eventsAt);
  const rev = head.indexOf(HEADER_REV);
  if (rev >= 0) info.headerRevision = numberAt(head, rev + HEADER_REV.length);
  const id = head.indexOf(WATCH_ID);
  if (id >= 0) info.watchId = numberAt(head, id + WATCH_ID.length);
  if (eventsAt < 0) {
    scanControl(head, info);
    return;
  }
  // Each mod_revision is found once: the search for the next one also bounds this value.
  let m = whole.indexOf(MOD_REV, eventsAt + EVENTS.length);
  while (m >= 0) {
    const at = m + MOD_REV.length;
    const modRevision = numberAt(whole, at);
    const next = whole.indexOf(MOD_REV, at);
    const v = whole.indexOf(VALUE, at);
    // The value is this event's only if it comes before the next event's mod_revision.
    const stamp = v >= 0 && (next < 0 || v < next) ? stampAt(whole, v + VALUE.length) : Number.NaN;
    info.events++;
    visit(modRevision, stamp);
    m = next;
  }
}

function scanControl(head: Buffer, info: WatchResponseInfo): void {
  info.created = head.indexOf(CREATED) >= 0;
  info.canceled = head.indexOf(CANCELED) >= 0;
  const c = head.indexOf(COMPACT);
  if (c >= 0) info.compactRevision = numberAt(head, c + COMPACT.length);
  const r = head.indexOf(REASON);
  if (r >= 0) {
    const from = r + REASON.length;
    info.cancelReason = head.toString('utf8', from, head.indexOf(QUOTE, from));
  }
}
