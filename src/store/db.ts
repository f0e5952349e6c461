/**
 * The store's view of LevelDB: five binary sublevels of one database, atomic batches across
 * them, and explicit snapshots. Everything the store does to disk goes through here, so the
 * rest of src/store is written against the narrow {@link Sub} interface rather than
 * abstract-level's generics.
 */
import { Level } from 'level';

export interface Snapshot {
  close(): Promise<void>;
}

export interface ReadOptions {
  snapshot?: Snapshot;
}

export interface RangeOptions extends ReadOptions {
  gte?: Uint8Array;
  gt?: Uint8Array;
  lt?: Uint8Array;
  lte?: Uint8Array;
  reverse?: boolean;
  limit?: number;
}

export interface EntryIterator {
  nextv(size: number): Promise<Array<[Uint8Array, Uint8Array]>>;
  close(): Promise<void>;
}

export interface KeyIterator {
  nextv(size: number): Promise<Uint8Array[]>;
  close(): Promise<void>;
}

/** A binary sublevel: Uint8Array keys and values. */
export interface Sub {
  get(key: Uint8Array, options?: ReadOptions): Promise<Uint8Array | undefined>;
  getMany(keys: Uint8Array[], options?: ReadOptions): Promise<Array<Uint8Array | undefined>>;
  iterator(options: RangeOptions): EntryIterator;
  keys(options: RangeOptions): KeyIterator;
}

export type BatchOp =
  | { type: 'put'; sublevel: Sub; key: Uint8Array; value: Uint8Array }
  | { type: 'del'; sublevel: Sub; key: Uint8Array };

export interface StoreDb {
  readonly kv: Sub;
  readonly hist: Sub;
  readonly rev: Sub;
  readonly lease: Sub;
  readonly meta: Sub;
  /** One atomic write across sublevels; `sync` asks LevelDB to fsync its log first. */
  write(ops: BatchOp[], sync: boolean): Promise<void>;
  snapshot(): Snapshot;
  /** Closes the database if this object opened it. */
  close(): Promise<void>;
}

// biome-ignore lint/suspicious/noExplicitAny: abstract-level's generic database type.
type AnyLevel = Level<any, any>;

const BINARY = { keyEncoding: 'view', valueEncoding: 'view' } as const;

/**
 * Wraps the sublevels of `db` (already opened or not). The store's sublevels live under the
 * prefix `mvcc` so that other parts of a member (Raft) can share the same database.
 */
export function storeDb(db: AnyLevel, ownsDb: boolean): StoreDb {
  const root = db.sublevel('mvcc', BINARY);
  const sub = (name: string) => root.sublevel(name, BINARY) as unknown as Sub;
  return {
    kv: sub('kv'),
    hist: sub('hist'),
    rev: sub('rev'),
    lease: sub('lease'),
    meta: sub('meta'),
    write: hasRawBatch(db)
      ? (ops, sync) => writeRaw(db, ops, sync)
      : (ops, sync) => writeChained(db, ops, sync),
    snapshot: () => db.snapshot() as Snapshot,
    close: async () => {
      if (ownsDb) await db.close();
    },
  };
}

// The chained batch form costs a third of the array form per operation in abstract-level 3
// (no per-operation object copies), which matters at thousands of operations per write.
const sublevelOptions = new WeakMap<Sub, { sublevel: never }>();

const prefixes = new WeakMap<Sub, Buffer>();

/** classic-level (what `level` is on Node) exposes the raw batch; other backends take the chained path. */
function hasRawBatch(db: AnyLevel): boolean {
  return (
    typeof (db as unknown as { _batch?: unknown })._batch === 'function' &&
    db.constructor.name !== 'MemoryLevel'
  );
}

/**
 * The fast path: classic-level's own batch entry point with keys prefixed here, skipping
 * abstract-level's per-operation wrapping (several object copies and encoder lookups per
 * operation), which dominated the cost of apply. Same bytes on disk as the sublevel path;
 * the store's reads go through the public sublevel API and see them.
 */
function writeRaw(db: AnyLevel, ops: BatchOp[], sync: boolean): Promise<void> {
  const raw = new Array(ops.length);
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as BatchOp;
    let prefix = prefixes.get(op.sublevel);
    if (!prefix) {
      prefix = Buffer.from((op.sublevel as unknown as { prefix: string }).prefix, 'utf8');
      prefixes.set(op.sublevel, prefix);
    }
    const key = Buffer.allocUnsafe(prefix.length + op.key.length);
    prefix.copy(key, 0);
    key.set(op.key, prefix.length);
    raw[i] = op.type === 'put' ? { type: 'put', key, value: op.value } : { type: 'del', key };
  }
  return (db as unknown as { _batch(ops: unknown[], o: { sync: boolean }): Promise<void> })._batch(
    raw,
    { sync },
  );
}

function writeChained(db: AnyLevel, ops: BatchOp[], sync: boolean): Promise<void> {
  const batch = db.batch();
  for (const op of ops) {
    let options = sublevelOptions.get(op.sublevel);
    if (!options) {
      options = { sublevel: op.sublevel as never };
      sublevelOptions.set(op.sublevel, options);
    }
    if (op.type === 'put') batch.put(op.key, op.value, options);
    else batch.del(op.key, options);
  }
  return batch.write({ sync });
}

export async function openLevel(dir: string): Promise<AnyLevel> {
  const db = new Level(dir, BINARY);
  await db.open();
  return db;
}
