/**
 * The bbolt writer and reader (src/bbolt): random buckets of random keys and values (large
 * values that overflow pages, nested buckets, empty buckets) written then read back give
 * the same; bbolt itself (through `etcdctl snapshot status`, which opens the file with
 * bbolt) accepts what the writer makes; damaged and truncated files are refused with
 * ERR_BOLT_CORRUPT / ERR_BOLT_TRUNCATED.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32c } from '@node-rs/crc32';
import fc from 'fast-check';
import t from 'tap';
import { BoltReader, dumpBolt } from '../../src/bbolt/reader.js';
import { type BoltItem, boltBytes } from '../../src/bbolt/writer.js';
import { isEtceteraError } from '../../src/errors.js';

interface Model {
  name: Buffer;
  entries: Array<[Buffer, Buffer]>;
  buckets: Model[];
}

function sortUnique<T>(items: T[], key: (x: T) => Buffer): T[] {
  const seen = new Set<string>();
  return items
    .filter((x) => {
      const k = key(x).toString('hex');
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    })
    .sort((a, b) => Buffer.compare(key(a), key(b)));
}

const keyArb = fc.uint8Array({ minLength: 1, maxLength: 40 }).map((a) => Buffer.from(a));
const valueArb = fc
  .oneof(
    { weight: 8, arbitrary: fc.uint8Array({ maxLength: 200 }) },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 4000, max: 20_000 }).map((n) => new Uint8Array(n).fill(n % 251)),
    },
  )
  .map((a) => Buffer.from(a));

const leafBucketArb = (name: fc.Arbitrary<Buffer>): fc.Arbitrary<Model> =>
  fc
    .record({ name, entries: fc.array(fc.tuple(keyArb, valueArb), { maxLength: 300 }) })
    .map((b) => ({ name: b.name, entries: sortUnique(b.entries, (e) => e[0]), buckets: [] }));

const bucketArb: fc.Arbitrary<Model> = fc
  .record({
    name: keyArb,
    entries: fc.array(fc.tuple(keyArb, valueArb), { maxLength: 120 }),
    buckets: fc.array(leafBucketArb(keyArb), { maxLength: 3 }),
  })
  .map((b) => {
    // One key space per bucket: nested bucket names must not collide with keys.
    const buckets = sortUnique(b.buckets, (x) => x.name);
    const names = new Set(buckets.map((x) => x.name.toString('hex')));
    return {
      name: b.name,
      entries: sortUnique(
        b.entries.filter((e) => !names.has(e[0].toString('hex'))),
        (e) => e[0],
      ),
      buckets,
    };
  });

const dbArb = fc
  .array(fc.oneof(bucketArb, leafBucketArb(keyArb)), { minLength: 1, maxLength: 5 })
  .map((bs) => sortUnique(bs, (b) => b.name));

function items(m: Model): BoltItem[] {
  const all: BoltItem[] = [
    ...m.entries.map(([key, value]) => ({ key, value })),
    ...m.buckets.map((b) => ({ key: b.name, bucket: items(b) })),
  ];
  return all.sort((a, b) => Buffer.compare(a.key, b.key));
}

const source = (db: Model[]) => () => db.map((b) => ({ key: b.name, bucket: items(b) }));

const hex = (m: Model): unknown => ({
  name: m.name.toString('hex'),
  entries: m.entries.map(([k, v]) => [
    k.toString('hex'),
    createHash('sha1').update(v).digest('hex'),
  ]),
  buckets: m.buckets.map(hex),
});

t.test('write then read gives the same buckets, keys and values', async (t) => {
  const dir = t.testdir();
  let n = 0;
  let overflowed = 0;
  await fc.assert(
    fc.asyncProperty(dbArb, async (db) => {
      const file = join(dir, `db-${n++}`);
      const bytes = await boltBytes(source(db));
      t.equal(bytes.length % 4096, 0);
      writeFileSync(file, bytes);
      const reader = await BoltReader.open(file);
      try {
        const back = await dumpBolt(reader);
        t.same(back.map(hex), db.map(hex));
        t.equal(reader.meta.highWater * 4096, bytes.length, 'the high-water mark is the file');
      } finally {
        await reader.close();
      }
      if (db.some((b) => b.entries.some(([, v]) => v.length > 4096))) overflowed++;
    }),
    { numRuns: 60 },
  );
  t.ok(overflowed > 0, `${overflowed} databases had values larger than a page`);
});

function etcdctlUnavailable(): string | undefined {
  const r = spawnSync('etcdctl', ['version'], {
    encoding: 'utf8',
    env: { ...process.env, ETCDCTL_API: '3' },
  });
  if (r.error) return `etcdctl is not installed (${(r.error as NodeJS.ErrnoException).code})`;
  return undefined;
}

/** etcdctl's snapshot hash: CRC-32C over every bucket name, key and value, in order. */
function expectedHash(db: Model[]): number {
  let crc = 0;
  const walk = (m: Model) => {
    for (const it of items(m)) {
      if (it.bucket !== undefined) throw new Error('etcdctl does not descend into nested buckets');
      crc = crc32c(it.value, crc32c(it.key, crc));
    }
  };
  for (const b of db) {
    crc = crc32c(b.name, crc);
    walk(b);
  }
  return crc >>> 0;
}

t.test(
  'bbolt opens what the writer makes (etcdctl snapshot status)',
  { skip: etcdctlUnavailable() ?? false },
  async (t) => {
    const dir = t.testdir();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc
          .array(leafBucketArb(keyArb), { minLength: 1, maxLength: 4 })
          .map((bs) => sortUnique(bs, (b) => b.name)),
        async (db) => {
          const file = join(dir, `db-${n++}`);
          writeFileSync(file, await boltBytes(source(db)));
          const r = spawnSync('etcdctl', ['snapshot', 'status', file, '-w', 'json'], {
            encoding: 'utf8',
            env: { ...process.env, ETCDCTL_API: '3' },
          });
          t.equal(r.status, 0, r.stderr);
          const status = JSON.parse(r.stdout) as {
            hash: number;
            totalKey: number;
            totalSize: number;
          };
          t.equal(
            status.totalKey,
            db.reduce((s, b) => s + b.entries.length, 0),
          );
          t.equal(status.hash, expectedHash(db));
        },
      ),
      { numRuns: 15 },
    );
  },
);

async function refusal(file: string): Promise<unknown> {
  try {
    const reader = await BoltReader.open(file);
    try {
      await dumpBolt(reader);
    } finally {
      await reader.close();
    }
  } catch (e) {
    return e;
  }
  return undefined;
}

t.test('truncated files, damaged meta pages, page headers and trailers are refused', async (t) => {
  const dir = t.testdir();
  const db: Model[] = [
    {
      name: Buffer.from('key'),
      entries: Array.from({ length: 400 }, (_, i) => [
        Buffer.from(`k${String(i).padStart(5, '0')}`),
        Buffer.alloc(i % 50 === 0 ? 9000 : 60, i % 256),
      ]),
      buckets: [],
    },
    { name: Buffer.from('meta'), entries: [[Buffer.from('x'), Buffer.from('y')]], buckets: [] },
  ];
  const bytes = await boltBytes(source(db));
  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.nat(bytes.length - 1), async (cut) => {
      const file = join(dir, `cut-${n++}`);
      writeFileSync(file, bytes.subarray(0, cut - (cut % 512)));
      const err = await refusal(file);
      t.ok(
        isEtceteraError(err, 'ERR_BOLT_TRUNCATED') || isEtceteraError(err, 'ERR_BOLT_CORRUPT'),
        String(err),
      );
    }),
    { numRuns: 40 },
  );
  // Any byte of a meta page's checked fields, of a page header, or of an element header.
  const metaOnly = fc.integer({ min: 16, max: 16 + 63 });
  await fc.assert(
    fc.asyncProperty(metaOnly, fc.integer({ min: 1, max: 255 }), async (at, x) => {
      const copy = Buffer.from(bytes);
      for (const page of [0, 4096]) copy[page + at] = (copy[page + at] as number) ^ x;
      const file = join(dir, `meta-${n++}`);
      writeFileSync(file, copy);
      const err = await refusal(file);
      t.ok(
        isEtceteraError(err, 'ERR_BOLT_CORRUPT') || isEtceteraError(err, 'ERR_BOLT_TRUNCATED'),
        String(err),
      );
    }),
    { numRuns: 40 },
  );
  // A page's own id or its type on any data page.
  const pages = bytes.length / 4096;
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 3, max: pages - 1 }),
      fc.constantFrom(0, 8),
      async (page, field) => {
        const copy = Buffer.from(bytes);
        const head = copy.readUInt16LE(page * 4096 + 8);
        if (head !== 1 && head !== 2) return; // an overflow page: no header of its own
        copy[page * 4096 + field] = (copy[page * 4096 + field] as number) ^ 0x40;
        const file = join(dir, `page-${n++}`);
        writeFileSync(file, copy);
        const err = await refusal(file);
        t.ok(isEtceteraError(err, 'ERR_BOLT_CORRUPT'), String(err));
      },
    ),
    { numRuns: 40 },
  );
  // A SHA-256 trailer that does not match the database.
  const withTrailer = Buffer.concat([bytes, createHash('sha256').update(bytes).digest()]);
  withTrailer[5000] = (withTrailer[5000] as number) ^ 1;
  const file = join(dir, 'trailer');
  writeFileSync(file, withTrailer);
  t.match(await refusal(file), { code: 'ERR_BOLT_CORRUPT', message: /SHA-256/ });
  t.match(await refusal(join(dir, 'nothing-here')), { code: 'ENOENT' });
});
