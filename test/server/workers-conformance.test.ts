/**
 * etcd 3.4's JSON API conformance through `serve --workers 2`: the ordered request list of
 * test/api/conformance (cases.ts) sent to the client port of a fresh member whose clients
 * are served by two worker processes, each answer normalised and compared with the
 * committed expected answers (etcd's own), as test/api/conformance.test.ts does for a
 * member serving its clients itself. fetch opens connections as it needs them, so the cases
 * are spread over both workers.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { CASES, type Case } from '../api/conformance/cases.js';
import { type Answer, normalise, parseAnswer } from '../api/conformance/normalise.js';
import { send } from '../api/servers.js';
import { repoPath } from '../paths.js';
import { compileCli } from './procs/compile.js';
import { startWorkersMember } from './procs/workers.js';

const expected = JSON.parse(
  readFileSync(repoPath('test', 'api', 'conformance', 'expected.json'), 'utf8'),
) as Record<string, Answer>;

function bodyOf(c: Case, captured: Map<string, string>): string | undefined {
  const raw = typeof c.body === 'function' ? c.body() : c.body;
  return raw?.replace(/\{\{(\w+)\}\}/g, (_, name: string) => captured.get(name) ?? '0');
}

function dig(v: unknown, path: string[]): unknown {
  let x = v;
  for (const p of path) x = (x as Record<string, unknown> | undefined)?.[p];
  return x;
}

t.test('the JSON conformance cases through two workers answer as etcd does', async (t) => {
  // The election timeout of test/api/servers.ts's member: the minimum lease TTL follows it.
  const m = await startWorkersMember(await compileCli(), t.testdir(), 2, [
    '--heartbeat-interval',
    '20',
    '--election-timeout',
    '1000',
  ]);
  t.teardown(() => m.close());
  const base = m.url;
  const captured = new Map<string, string>();
  for (const c of CASES) {
    const r = await send(base, c.method ?? 'POST', c.path, bodyOf(c, captured));
    const raw = parseAnswer(r.status, r.text);
    if (c.capture) captured.set(c.capture.name, String(dig(raw.body, c.capture.path)));
    const want = c.ours ? { status: c.ours.status, body: c.ours.body } : expected[c.name];
    const why = c.ours ? ` (differs from etcd on purpose: ${c.ours.why})` : '';
    t.same(normalise(raw, c.normalise), want, `${c.name}${why}`);
  }
});
