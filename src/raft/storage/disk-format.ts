/**
 * The on-disk encodings of the durable Raft state (see ./level-storage.ts).
 *
 *   raft-log  key: index of a segment's first entry as 8-byte big-endian (so LevelDB's
 *             byte order is log order; see log-segments.ts)
 *             value: version, count, then each entry (term, index, type, data) as in the
 *             wire codec; indices are stored so a misplaced record is detected on load.
 *   raft-state key "hard": hard state (version, term, vote, commit)
 *   raft-snap key "snap": snapshot (version, index, term, voters, learners, data)
 *
 * Every value starts with a format version byte so later versions can migrate. Decoding is
 * strict: anything malformed is ERR_CORRUPT, never a guess.
 */
import { EtceteraError } from '../../errors.js';
import { readEntry, readSnapshot, writeEntry, writeSnapshot } from '../driver/codec.js';
import { Reader, Writer } from '../driver/wire.js';
import { type Entry, type HardState, LogIndex, NodeId, type Snapshot, Term } from '../types.js';

const FORMAT_V1 = 1;

export function logKey(index: LogIndex): Uint8Array {
  return new Writer(8).u64be(index).finish();
}

export function decodeLogKey(key: Uint8Array): LogIndex {
  if (key.length !== 8) throw corrupt(`log key of ${key.length} bytes`);
  return LogIndex(new Reader(key).u64be());
}

/** Encodes a run of consecutive entries as one segment record. */
export function encodeSegment(entries: readonly Entry[]): Uint8Array {
  let size = 16;
  for (const e of entries) size += e.data.length + 24;
  const w = new Writer(size).u8(FORMAT_V1).uvarint(entries.length);
  for (const e of entries) writeEntry(w, e);
  return w.finish();
}

export function encodeHardState(hs: HardState): Uint8Array {
  return new Writer(32).u8(FORMAT_V1).uvarint(hs.term).uvarint(hs.vote).uvarint(hs.commit).finish();
}

export function encodeSnapshot(s: Snapshot): Uint8Array {
  const w = new Writer(s.data.length + 64).u8(FORMAT_V1);
  writeSnapshot(w, s);
  return w.finish();
}

/** Decodes a segment; its entries must be consecutive from `start` (the record's key). */
export function decodeSegment(start: LogIndex, value: Uint8Array): Entry[] {
  return strictly('log segment', value, (r) => {
    const n = r.uvarint();
    if (n === 0 || n * 4 > r.remaining) throw corrupt(`segment at ${start} claims ${n} entries`);
    const out: Entry[] = [];
    for (let k = 0; k < n; k++) {
      const e = readEntry(r);
      if (e.index !== start + k) {
        throw corrupt(`segment at ${start} holds entry ${e.index} at position ${k}`);
      }
      out.push(e);
    }
    return out;
  });
}

export function decodeHardState(value: Uint8Array): HardState {
  return strictly('hard state', value, (r) => ({
    term: Term(r.uvarint()),
    vote: NodeId(r.uvarint()),
    commit: LogIndex(r.uvarint()),
  }));
}

export function decodeSnapshot(value: Uint8Array): Snapshot {
  return strictly('snapshot', value, (r) => readSnapshot(r));
}

function strictly<T>(what: string, value: Uint8Array, read: (r: Reader) => T): T {
  try {
    const r = new Reader(value);
    const version = r.u8();
    if (version !== FORMAT_V1) throw corrupt(`${what}: unknown format version ${version}`);
    const out = read(r);
    r.end();
    return out;
  } catch (e) {
    if (e instanceof EtceteraError) throw e;
    throw corrupt(`${what}: ${(e as Error).message}`, e);
  }
}

function corrupt(detail: string, cause?: unknown): EtceteraError {
  return new EtceteraError('ERR_CORRUPT', { detail: `raft storage: ${detail}` }, { cause });
}
