/**
 * Output of the client CLI (src/cli/client.ts) in etcdctl 3.4's formats, so scripts written
 * against etcdctl read ours: "simple" (keys and values on their own lines, "OK", counts),
 * "json" (the gateway's message with 64-bit numbers printed as numbers, as etcdctl prints
 * them) and "table" for member list and endpoint status. Lease and member IDs print in hex
 * in simple and table output, in decimal in JSON, as etcdctl does.
 */
import { toBase64 } from '../wire/bytes.js';
import { text } from './codec.js';
import type {
  AlarmResponse,
  DeleteResponse,
  HashKvResponse,
  KeyValue,
  LeaseGrantResponse,
  LeaseTimeToLiveResponse,
  Member,
  PutResponse,
  RangeResponse,
  ResponseHeader,
  StatusResponse,
  TxnOpResponse,
  TxnResponse,
  WatchBatch,
} from './types.js';

export const OutputFormat = { simple: 'simple', json: 'json', table: 'table' } as const;
export type OutputFormat = (typeof OutputFormat)[keyof typeof OutputFormat];

/** A decimal uint64 printed raw in JSON (beyond what a JS number holds exactly). */
class Raw {
  constructor(readonly digits: string) {}
}
const RAW = '\u0000raw:';

/** JSON.stringify, with Raw values printed as bare digits. */
export function stringify(v: unknown): string {
  const s = JSON.stringify(v, (_k, x: unknown) => (x instanceof Raw ? `${RAW}${x.digits}` : x));
  return s.replace(/"\\u0000raw:(-?\d+)"/g, '$1');
}

const raw = (decimal: string) => new Raw(decimal);
const nz = (n: number) => (n === 0 ? undefined : n);
const b64 = (b: Uint8Array) => (b.length === 0 ? undefined : toBase64(b));

export function hexId(decimal: string): string {
  return BigInt(decimal).toString(16);
}

/** etcdctl prints lease IDs as %016x. */
export function leaseHex(decimal: string): string {
  return hexId(decimal).padStart(16, '0');
}

export function headerJson(h: ResponseHeader, revision = true): Record<string, unknown> {
  return {
    cluster_id: raw(h.clusterId),
    member_id: raw(h.memberId),
    revision: revision ? nz(h.revision) : undefined,
    raft_term: nz(h.raftTerm),
  };
}

export function kvJson(kv: KeyValue): Record<string, unknown> {
  return {
    key: b64(kv.key),
    create_revision: nz(kv.createRevision),
    mod_revision: nz(kv.modRevision),
    version: nz(kv.version),
    value: b64(kv.value),
    lease: kv.lease === '0' ? undefined : raw(kv.lease),
  };
}

const kvsJson = (kvs: KeyValue[]) => (kvs.length === 0 ? undefined : kvs.map(kvJson));

/** etcdctl's printKV: the key on one line (unless values only), the value on the next. */
function kvLines(kv: KeyValue, valueOnly = false): string[] {
  return valueOnly ? [text(kv.value)] : [text(kv.key), text(kv.value)];
}

export function formatGet(r: RangeResponse, f: OutputFormat, valueOnly = false): string[] {
  if (f === 'json') {
    return [
      stringify({
        header: headerJson(r.header),
        kvs: kvsJson(r.kvs),
        more: r.more || undefined,
        count: nz(r.count),
      }),
    ];
  }
  return r.kvs.flatMap((kv) => kvLines(kv, valueOnly));
}

export function formatPut(r: PutResponse, f: OutputFormat): string[] {
  if (f === 'json') {
    return [stringify({ header: headerJson(r.header), prev_kv: r.prevKv && kvJson(r.prevKv) })];
  }
  return ['OK', ...(r.prevKv ? kvLines(r.prevKv) : [])];
}

export function formatDelete(r: DeleteResponse, f: OutputFormat): string[] {
  if (f === 'json') {
    return [
      stringify({
        header: headerJson(r.header),
        deleted: nz(r.deleted),
        prev_kvs: kvsJson(r.prevKvs),
      }),
    ];
  }
  return [String(r.deleted), ...r.prevKvs.flatMap((kv) => kvLines(kv))];
}

function opLines(op: TxnOpResponse): string[] {
  switch (op.type) {
    case 'range':
      return op.kvs.flatMap((kv) => kvLines(kv));
    case 'put':
      return ['OK'];
    case 'delete':
      return [String(op.deleted)];
    case 'txn':
      return [
        op.succeeded ? 'SUCCESS' : 'FAILURE',
        ...op.responses.flatMap((r) => ['', ...opLines(r)]),
      ];
  }
}

function opJson(op: TxnOpResponse): Record<string, unknown> {
  switch (op.type) {
    case 'range':
      return {
        ResponseRange: {
          header: { revision: nz(op.revision) },
          kvs: kvsJson(op.kvs),
          more: op.more || undefined,
          count: nz(op.count),
        },
      };
    case 'put':
      return {
        ResponsePut: {
          header: { revision: nz(op.revision) },
          prev_kv: op.prevKv && kvJson(op.prevKv),
        },
      };
    case 'delete':
      return {
        ResponseDeleteRange: {
          header: { revision: nz(op.revision) },
          deleted: nz(op.deleted),
          prev_kvs: kvsJson(op.prevKvs),
        },
      };
    case 'txn':
      return {
        ResponseTxn: {
          header: {},
          succeeded: op.succeeded || undefined,
          responses: op.responses.map((r) => ({ Response: opJson(r) })),
        },
      };
  }
}

export function formatTxn(r: TxnResponse, f: OutputFormat): string[] {
  if (f === 'json') {
    const responses = r.responses.map((op) => ({ Response: opJson(op) }));
    return [
      stringify({
        header: headerJson(r.header),
        succeeded: r.succeeded || undefined,
        responses: responses.length === 0 ? undefined : responses,
      }),
    ];
  }
  return [
    r.succeeded ? 'SUCCESS' : 'FAILURE',
    ...r.responses.flatMap((op) => ['', ...opLines(op)]),
  ];
}

export function formatWatch(b: WatchBatch, f: OutputFormat, withPrev: boolean): string[] {
  if (f === 'json') {
    const events = b.events.map((e) => ({
      type: e.type === 'DELETE' ? 1 : undefined,
      kv: kvJson(e.kv),
      prev_kv: e.prevKv && kvJson(e.prevKv),
    }));
    const header = headerJson(b.header);
    return [
      stringify({
        Header: header,
        Events: events,
        CompactRevision: 0,
        Canceled: false,
        Created: false,
      }),
    ];
  }
  return b.events.flatMap((e) => [
    e.type,
    ...(withPrev && e.prevKv ? kvLines(e.prevKv) : []),
    ...kvLines(e.kv),
  ]);
}

export function formatTimeToLive(
  r: LeaseTimeToLiveResponse,
  f: OutputFormat,
  withKeys: boolean,
): string[] {
  if (f === 'json') {
    return [
      stringify({
        ...headerJson(r.header),
        id: raw(r.id),
        ttl: r.ttl,
        'granted-ttl': r.grantedTtl,
        keys: r.keys.length === 0 ? null : r.keys.map(toBase64),
      }),
    ];
  }
  const id = leaseHex(r.id);
  if (r.ttl === -1) return [`lease ${id} already expired`];
  const keys = withKeys ? `, attached keys([${r.keys.map(text).join(' ')}])` : '';
  return [`lease ${id} granted with TTL(${r.grantedTtl}s), remaining(${r.ttl}s)${keys}`];
}

export function formatLeaseGrant(r: LeaseGrantResponse, f: OutputFormat): string[] {
  if (f === 'json') {
    return [stringify({ ...headerJson(r.header), ID: raw(r.id), TTL: r.ttl, Error: '' })];
  }
  return [`lease ${leaseHex(r.id)} granted with TTL(${r.ttl}s)`];
}

export function formatLeases(header: ResponseHeader, leases: string[], f: OutputFormat): string[] {
  if (f === 'json') {
    return [stringify({ ...headerJson(header), leases: leases.map((id) => ({ id: raw(id) })) })];
  }
  return [`found ${leases.length} leases`, ...leases.map(leaseHex)];
}

// --- tables -----------------------------------------------------------------------------

/** etcdctl's tables: centred headers, right-aligned cells, +---+ rules. */
export function table(headers: string[], rows: string[][]): string[] {
  const widths = headers.map(
    (h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)) + 2,
  );
  const rule = `+${widths.map((w) => '-'.repeat(w)).join('+')}+`;
  const centre = (s: string, w: number) => {
    const left = Math.floor((w - s.length) / 2);
    return `${' '.repeat(left)}${s}${' '.repeat(w - s.length - left)}`;
  };
  const line = (cells: string[], fmt: (s: string, w: number) => string) =>
    `|${cells.map((c, i) => fmt(c, widths[i] as number)).join('|')}|`;
  return [
    rule,
    line(headers, centre),
    rule,
    ...rows.map((r) => line(r, (s, w) => `${' '.repeat(w - 1 - s.length)}${s} `)),
    rule,
  ];
}

export function memberRow(m: Member): string[] {
  return [
    hexId(m.id),
    m.name === '' ? 'unstarted' : 'started',
    m.name,
    m.peerURLs.join(','),
    m.clientURLs.join(','),
    String(m.isLearner),
  ];
}

export function formatMembers(
  header: ResponseHeader,
  members: Member[],
  f: OutputFormat,
): string[] {
  if (f === 'json') {
    const ms = members.map((m) => ({
      ID: raw(m.id),
      name: m.name || undefined,
      peerURLs: m.peerURLs.length ? m.peerURLs : undefined,
      clientURLs: m.clientURLs.length ? m.clientURLs : undefined,
      isLearner: m.isLearner || undefined,
    }));
    return [stringify({ header: headerJson(header, false), members: ms })];
  }
  const rows = members.map(memberRow);
  if (f === 'table') {
    return table(['ID', 'STATUS', 'NAME', 'PEER ADDRS', 'CLIENT ADDRS', 'IS LEARNER'], rows);
  }
  return rows.map((r) => r.join(', '));
}

/** go-humanize's Bytes: SI units, one decimal below 10. */
export function humanBytes(n: number): string {
  if (n < 10) return `${n} B`;
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB'];
  const e = Math.min(Math.floor(Math.log(n) / Math.log(1000)), units.length - 1);
  const v = n / 1000 ** e;
  return `${v < 10 ? v.toFixed(1) : v.toFixed(0)} ${units[e]}`;
}

export function statusRow(endpoint: string, s: StatusResponse): string[] {
  return [
    endpoint,
    hexId(s.header.memberId),
    s.version,
    humanBytes(s.dbSize),
    String(s.leader === s.header.memberId),
    String(s.isLearner),
    String(s.raftTerm),
    String(s.raftIndex),
    String(s.raftAppliedIndex),
    s.errors.join(', '),
  ];
}

export function formatStatus(
  all: Array<{ endpoint: string; status: StatusResponse }>,
  f: OutputFormat,
): string[] {
  if (f === 'json') {
    const list = all.map(({ endpoint, status: s }) => ({
      Endpoint: endpoint,
      Status: {
        header: headerJson(s.header),
        version: s.version,
        dbSize: s.dbSize,
        leader: raw(s.leader),
        raftIndex: s.raftIndex,
        raftTerm: s.raftTerm,
        raftAppliedIndex: s.raftAppliedIndex,
        errors: s.errors.length ? s.errors : undefined,
        dbSizeInUse: s.dbSizeInUse,
        isLearner: s.isLearner || undefined,
      },
    }));
    return [stringify(list)];
  }
  const rows = all.map(({ endpoint, status }) => statusRow(endpoint, status));
  if (f === 'table') {
    const headers = [
      'ENDPOINT',
      'ID',
      'VERSION',
      'DB SIZE',
      'IS LEADER',
      'IS LEARNER',
      'RAFT TERM',
      'RAFT INDEX',
      'RAFT APPLIED INDEX',
      'ERRORS',
    ];
    return table(headers, rows);
  }
  return rows.map((r) => `${r.join(', ')}`);
}

// --- maintenance ------------------------------------------------------------------------

/** etcdctl refuses a format a command has no printer for ("table not supported ..."). */
export class UnsupportedFormat extends Error {
  constructor(f: OutputFormat) {
    super(`${f} not supported as output format`);
  }
}

const ALARM_NUMBER = { NONE: 0, NOSPACE: 1, CORRUPT: 2 } as const;

/** A header etcd left empty (alarm, defragment and move-leader answers) is left out. */
const optionalHeader = (h: ResponseHeader) =>
  h.clusterId === '0' && h.memberId === '0' ? undefined : headerJson(h);

/** `alarm list` and `alarm disarm`: one protobuf text line per alarm. */
export function formatAlarms(r: AlarmResponse, f: OutputFormat): string[] {
  if (f === 'table') throw new UnsupportedFormat(f);
  if (f === 'json') {
    const alarms = r.alarms.map((a) => ({
      memberID: raw(a.memberId),
      alarm: nz(ALARM_NUMBER[a.alarm]),
    }));
    return [
      stringify({
        header: optionalHeader(r.header),
        alarms: alarms.length > 0 ? alarms : undefined,
      }),
    ];
  }
  return r.alarms.map((a) => `memberID:${a.memberId} alarm:${a.alarm} `);
}

export function formatHashKv(
  all: Array<{ endpoint: string; hashKv: HashKvResponse }>,
  f: OutputFormat,
): string[] {
  if (f === 'json') {
    const list = all.map(({ endpoint, hashKv: h }) => ({
      Endpoint: endpoint,
      HashKV: {
        header: headerJson(h.header),
        hash: nz(h.hash),
        compact_revision: nz(h.compactRevision),
      },
    }));
    return [stringify(list)];
  }
  const rows = all.map(({ endpoint, hashKv }) => [endpoint, String(hashKv.hash)]);
  if (f === 'table') return table(['ENDPOINT', 'HASH'], rows);
  return rows.map((r) => r.join(', '));
}

/** `member update`: etcdctl prints both IDs as %16x (space-padded hex). */
export function formatMemberUpdate(
  id: string,
  header: ResponseHeader,
  members: Member[],
  f: OutputFormat,
): string[] {
  if (f === 'table') throw new UnsupportedFormat(f);
  if (f === 'json') return formatMembers(header, members, f);
  const pad = (d: string) => hexId(d).padStart(16, ' ');
  return [`Member ${pad(id)} updated in cluster ${pad(header.clusterId)}`];
}

export function formatMoveLeader(
  from: string,
  to: string,
  header: ResponseHeader,
  f: OutputFormat,
): string[] {
  if (f === 'table') throw new UnsupportedFormat(f);
  if (f === 'json') return [stringify({ header: optionalHeader(header) })];
  return [`Leadership transferred from ${hexId(from)} to ${hexId(to)}`];
}

/** `snapshot status`: etcdctl prints the hash in hex in simple and table form. */
export function formatSnapshotStatus(
  s: { hash: number; revision: number; totalKey: number; totalSize: number },
  f: OutputFormat,
): string[] {
  if (f === 'json') return [stringify(s)];
  const row = [
    s.hash.toString(16),
    String(s.revision),
    String(s.totalKey),
    humanBytes(s.totalSize),
  ];
  if (f === 'table') return table(['HASH', 'REVISION', 'TOTAL KEYS', 'TOTAL SIZE'], [row]);
  return [row.join(', ')];
}

/** `snapshot restore`: what was built (etcdctl prints only log lines; this says the same). */
export function formatRestore(
  r: {
    dataDir: string;
    memberId: string;
    clusterId: string;
    revision: number;
    compactRevision: number;
    records: number;
    leases: number;
    remappedLeases: number;
  },
  f: OutputFormat,
): string[] {
  if (f === 'json') return [stringify(r)];
  const hex = (id: string) => BigInt(id).toString(16);
  const lines = [
    `Restored snapshot into ${r.dataDir}: member ${hex(r.memberId)} of cluster ${hex(r.clusterId)}, ` +
      `revision ${r.revision} (compacted at ${r.compactRevision}), ${r.records} key records, ${r.leases} leases`,
  ];
  if (r.remappedLeases > 0)
    lines.push(`${r.remappedLeases} lease IDs beyond 2^53 were given new IDs (their low 53 bits)`);
  return lines;
}
