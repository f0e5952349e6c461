/**
 * Shared by the store tests: a canonical, comparable form of results and events, the whole
 * observable state of a store (and of the model) in that form, and a runner that applies a
 * command to both and reports any difference.
 */
import { deepStrictEqual } from 'node:assert/strict';
import { isEtceteraError } from '../../src/errors.js';
import type { EmbeddedStore } from '../../src/store/index.js';
import type { Command, EventBatch, RangeRequest } from '../../src/store/types.js';
import type { Model, Outcome } from './model.js';

/** Every key: the range from "\0" with range_end "\0". */
export const ALL: RangeRequest = { key: Uint8Array.of(0), rangeEnd: Uint8Array.of(0) };

/**
 * A plain-data copy: bytes become "0x<hex>" strings (Buffer and Uint8Array alike), undefined
 * properties disappear, so deepStrictEqual compares meaning rather than representation.
 */
export function canon(v: unknown): unknown {
  if (v instanceof Uint8Array) return `0x${Buffer.from(v).toString('hex')}`;
  if (Array.isArray(v)) return v.map(canon);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = canon(x);
    return out;
  }
  return v;
}

/** Runs a store call as an Outcome: a result, or the code of the EtceteraError it threw. */
export async function outcome<T>(p: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, result: await p() };
  } catch (e) {
    if (isEtceteraError(e)) return { ok: false, code: e.code };
    throw e;
  }
}

export interface Observed {
  revision: number;
  compactRevision: number;
  kvs: unknown;
  leases: unknown;
}

/** Everything a caller can see of the store's state, canonical. */
export async function storeState(store: EmbeddedStore): Promise<Observed> {
  const all = await store.range(ALL);
  return {
    revision: store.currentRevision,
    compactRevision: store.compactRevision,
    kvs: canon(all.kvs),
    leases: store.leases().map((id) => {
      const l = store.leaseTimeToLive(id, { keys: true });
      return { id, ttl: l.grantedTtl, keys: l.keys.map((k) => Buffer.from(k).toString('latin1')) };
    }),
  };
}

export function modelState(model: Model): Observed {
  const all = model.range(ALL);
  if (!all.ok) throw new Error(`model cannot range over everything: ${all.code}`);
  return {
    revision: model.revision,
    compactRevision: model.compactRevision,
    kvs: canon(all.result.kvs),
    leases: model.leases(),
  };
}

/** Subscribes and collects every batch the store publishes. */
export function collect(store: EmbeddedStore, into: EventBatch[]): () => void {
  return store.subscribe((b) => into.push(b));
}

/** A readable one-line form of a command for failure messages (bytes as latin1 JSON). */
export function describe(c: unknown): string {
  return JSON.stringify(c, (_k, v) =>
    v instanceof Uint8Array ? `b:${Buffer.from(v).toString('latin1')}` : v,
  );
}

/** Asserts that two outcomes agree: same result (canonical) or same error code. */
export function sameOutcome(actual: Outcome<unknown>, expected: Outcome<unknown>, what: string) {
  deepStrictEqual(canon(actual), canon(expected), what);
}

/** Applies `command` to the store (through submit) and the model; asserts they agree. */
export async function applyBoth(store: EmbeddedStore, model: Model, command: Command) {
  const got = await outcome(() => store.submit(command));
  const want = model.apply(command);
  sameOutcome(got, want, `command ${describe(command)}`);
  return got;
}
