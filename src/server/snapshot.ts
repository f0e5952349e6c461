/**
 * A member's Raft snapshot: the member registry and the store's own snapshot, in one blob.
 *
 *   [version: u8 = 1][registry length: u32 BE][registry JSON][store snapshot bytes]
 *
 * The registry travels with the store so that a member that catches up from a snapshot
 * also learns who its peers are.
 */
import { EtceteraError } from '../errors.js';
import type { ClusterRecord } from './registry.js';

const VERSION = 1;
const HEADER = 5;

export function encodeSnapshot(cluster: ClusterRecord, store: Uint8Array): Uint8Array {
  const json = Buffer.from(JSON.stringify(cluster), 'utf8');
  const out = new Uint8Array(HEADER + json.length + store.length);
  out[0] = VERSION;
  new DataView(out.buffer).setUint32(1, json.length);
  out.set(json, HEADER);
  out.set(store, HEADER + json.length);
  return out;
}

export function decodeSnapshot(data: Uint8Array): { cluster: ClusterRecord; store: Uint8Array } {
  if (data.length < HEADER || data[0] !== VERSION)
    throw new EtceteraError('ERR_CORRUPT', { detail: 'member snapshot header' });
  const len = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(1);
  if (HEADER + len > data.length)
    throw new EtceteraError('ERR_CORRUPT', { detail: 'member snapshot length' });
  let cluster: ClusterRecord;
  try {
    cluster = JSON.parse(Buffer.from(data.subarray(HEADER, HEADER + len)).toString('utf8'));
  } catch (cause) {
    throw new EtceteraError('ERR_CORRUPT', { detail: 'member snapshot registry' }, { cause });
  }
  return { cluster, store: data.subarray(HEADER + len) };
}
