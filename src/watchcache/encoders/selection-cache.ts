/**
 * The per-entry cache both etcd watch encoders (JSON and protobuf) keep their encoded event
 * tails in: one map per wire variant (prev_kv, fragment) on the window entry, keyed by the
 * watcher's event selection (filters), so a batch is encoded once per distinct selection
 * and the same bytes go to every watcher that shares it.
 */
import type { EventView, WindowEntry } from '../types.js';

/** The cached value for (variant, selection) on `entry`, built by `build` the first time. */
export function perSelection<T>(
  entry: WindowEntry,
  variantKey: string,
  view: EventView,
  build: () => T,
): T {
  let bySelection = entry.encodings.get(variantKey) as Map<string, T> | undefined;
  if (bySelection === undefined) {
    bySelection = new Map();
    entry.encodings.set(variantKey, bySelection);
  }
  let value = bySelection.get(view.key);
  if (value === undefined) {
    value = build();
    bySelection.set(view.key, value);
  }
  return value;
}
