/**
 * Conformance with etcd 3.4's JSON API: the same ordered request list (conformance/cases.ts)
 * against etcetera (the store double and a real member) and, when `etcd` is installed,
 * against a real etcd started here. Answers are normalised (conformance/normalise.ts) and
 * compared with the committed expected answers, which are etcd's own: so without etcd the
 * test still holds etcetera to etcd's answers, and with etcd it also checks those
 * expectations are still what etcd says.
 *
 * Re-record the expectations from a real etcd: ETCETERA_RECORD_CONFORMANCE=1 npx tap test/api/conformance.test.ts
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t, { type Test } from 'tap';
import { repoPath } from '../paths.js';
import { CASES, type Case } from './conformance/cases.js';
import { type Answer, normalise, parseAnswer } from './conformance/normalise.js';
import {
  etcdUnavailable,
  send,
  startDouble,
  startEtcd,
  startMember,
  type Target,
} from './servers.js';

const EXPECTED_FILE = pathToFileURL(repoPath('test', 'api', 'conformance', 'expected.json'));
const RECORD = process.env.ETCETERA_RECORD_CONFORMANCE === '1';

function bodyOf(c: Case, captured: Map<string, string>): string | undefined {
  const raw = typeof c.body === 'function' ? c.body() : c.body;
  return raw?.replace(/\{\{(\w+)\}\}/g, (_, name: string) => captured.get(name) ?? '0');
}

function dig(v: unknown, path: string[]): unknown {
  let x = v;
  for (const p of path) x = (x as Record<string, unknown> | undefined)?.[p];
  return x;
}

/** Runs the whole list against one server, in order; answers by case name. */
async function session(target: Target): Promise<Map<string, Answer>> {
  const answers = new Map<string, Answer>();
  const captured = new Map<string, string>();
  for (const c of CASES) {
    const r = await send(target.url, c.method ?? 'POST', c.path, bodyOf(c, captured));
    const raw = parseAnswer(r.status, r.text);
    if (c.capture) captured.set(c.capture.name, String(dig(raw.body, c.capture.path)));
    answers.set(c.name, normalise(raw, c.normalise));
  }
  return answers;
}

const names = CASES.map((c) => c.name);
t.equal(new Set(names).size, names.length, 'case names are unique');

const expected: Record<string, Answer> = RECORD
  ? {}
  : (JSON.parse(readFileSync(EXPECTED_FILE, 'utf8')) as Record<string, Answer>);

function check(t: Test, target: Target, answers: Map<string, Answer>, asEtcd: boolean): void {
  for (const c of CASES) {
    const got = answers.get(c.name);
    const want =
      !asEtcd && c.ours ? { status: c.ours.status, body: c.ours.body } : expected[c.name];
    const why = !asEtcd && c.ours ? ` (differs from etcd on purpose: ${c.ours.why})` : '';
    t.same(got, want, `${target.name}: ${c.name}${why}`);
  }
}

t.test('etcetera over the store double answers as etcd does', { skip: RECORD }, async (t) => {
  const target = await startDouble(t.testdir());
  t.teardown(() => target.close());
  check(t, target, await session(target), false);
});

t.test('etcetera as a real member answers as etcd does', { skip: RECORD }, async (t) => {
  const target = await startMember(t.testdir());
  t.teardown(() => target.close());
  check(t, target, await session(target), false);
});

t.test('a real etcd gives the recorded answers', async (t) => {
  const reason = etcdUnavailable();
  if (reason !== undefined) {
    t.comment(
      `not comparing with a real etcd: ${reason}; etcetera was compared with the recorded answers`,
    );
    if (RECORD) t.fail('recording needs a real etcd');
    return;
  }
  const target = await startEtcd(t.testdir());
  t.teardown(() => target.close());
  const answers = await session(target);
  if (RECORD) {
    const out = Object.fromEntries(CASES.map((c) => [c.name, answers.get(c.name)]));
    writeFileSync(EXPECTED_FILE, JSON.stringify(out));
    // In the repository's format, so `biome check` passes and a change shows as a small diff.
    spawnSync('npx', ['biome', 'format', '--write', fileURLToPath(EXPECTED_FILE)], {
      stdio: 'ignore',
    });
    t.skip(`recorded ${CASES.length} answers from etcd: nothing compared`, () => {});
    return;
  }
  check(t, target, answers, true);
});
