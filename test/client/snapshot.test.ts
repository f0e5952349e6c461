/**
 * Saving a snapshot stream to a file: the SHA-256 trailer is checked while the bytes stream,
 * a file is renamed into place only when it matches, and a bad or missing trailer leaves
 * no file behind (neither the target nor its .part).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { saveSnapshot } from '../../src/client/snapshot.js';
import { isEtceteraError } from '../../src/errors.js';

/** The stream cut into chunks at the given offsets. */
async function* chunked(all: Buffer, cuts: number[]): AsyncIterable<Uint8Array> {
  let at = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    if (cut > at && cut < all.length) {
      yield all.subarray(at, cut);
      at = cut;
    }
  }
  yield all.subarray(at);
}

const withTrailer = (data: Buffer) =>
  Buffer.concat([data, createHash('sha256').update(data).digest()]);

t.test('a stream with a good trailer is saved whole, however it is chunked', async (t) => {
  const dir = t.testdir();
  let n = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.uint8Array({ minLength: 0, maxLength: 300 }),
      fc.array(fc.nat(340), { maxLength: 8 }),
      async (data, cuts) => {
        const all = withTrailer(Buffer.from(data));
        const file = join(dir, `ok-${n++}.db`);
        const saved = await saveSnapshot(chunked(all, cuts), file);
        t.equal(saved.size, all.length);
        t.same(readFileSync(file), all);
        t.notOk(existsSync(`${file}.part`));
      },
    ),
    { numRuns: 60 },
  );
});

t.test('a wrong or missing trailer fails and leaves no file', async (t) => {
  const dir = t.testdir();
  let n = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.uint8Array({ minLength: 1, maxLength: 200 }),
      fc.nat(),
      fc.array(fc.nat(240), { maxLength: 5 }),
      async (data, flip, cuts) => {
        const all = withTrailer(Buffer.from(data));
        const at = flip % all.length;
        all[at] = (all[at] as number) ^ 0x01; // one bit off, in the data or the trailer
        const file = join(dir, `bad-${n++}.db`);
        const err = await saveSnapshot(chunked(all, cuts), file).catch((e: unknown) => e);
        t.ok(isEtceteraError(err, 'ERR_SNAPSHOT_INTEGRITY'), String(err));
        t.notOk(existsSync(file));
        t.notOk(existsSync(`${file}.part`));
      },
    ),
    { numRuns: 60 },
  );
  const short = join(dir, 'short.db');
  const err = await saveSnapshot(chunked(Buffer.alloc(20), []), short).catch((e: unknown) => e);
  t.match(err, { code: 'ERR_SNAPSHOT_INTEGRITY', message: /without a SHA-256 trailer/ });
  t.notOk(existsSync(short));
});

t.test('a stream that breaks leaves no file and passes its error on', async (t) => {
  const file = join(t.testdir(), 'broken.db');
  async function* breaking(): AsyncIterable<Uint8Array> {
    yield Buffer.alloc(100);
    throw new Error('connection lost');
  }
  await t.rejects(saveSnapshot(breaking(), file), { message: 'connection lost' });
  t.notOk(existsSync(file));
  t.notOk(existsSync(`${file}.part`));
});
