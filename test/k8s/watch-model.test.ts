/**
 * The Kubernetes watch over the watch cache against a model: for a random sequence of creates,
 * label changes, node changes and deletes in one namespace, and a random watch (label selector,
 * spec.nodeName field selector or both; from resourceVersion 0 with its synthetic ADDEDs, or
 * from the revision after some prefix of the writes), the real HTTP watch delivers exactly the
 * events the model computes: ADDED/MODIFIED/DELETED with selector transitions (leaving the
 * selection is DELETED with the last matching state), in order, each with its resourceVersion.
 * A final write that the watch selects marks the end of what to compare.
 */
import fc from 'fast-check';
import t from 'tap';
import { call, type KubeServer, pod, startKube } from './harness.js';
import { openWatch } from './watch-client.js';

type App = 'a' | 'b' | 'c';
type Node = 'n1' | 'n2';
interface PodState {
  app: App;
  node: Node;
}

type Op =
  | { kind: 'create'; pod: number; app: App; node: Node }
  | { kind: 'label'; pod: number; app: App }
  | { kind: 'node'; pod: number; node: Node }
  | { kind: 'delete'; pod: number };

const labelSelectors = {
  none: { query: '', matches: (_: App) => true, sentinel: 'a' as App },
  'app=a': { query: 'app=a', matches: (a: App) => a === 'a', sentinel: 'a' as App },
  'app!=a': { query: 'app!=a', matches: (a: App) => a !== 'a', sentinel: 'c' as App },
  'app in (a,b)': { query: 'app in (a,b)', matches: (a: App) => a !== 'c', sentinel: 'b' as App },
};

const app = fc.constantFrom<App>('a', 'b', 'c');
const node = fc.constantFrom<Node>('n1', 'n2');
const podIndex = fc.integer({ min: 0, max: 3 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('create' as const), pod: podIndex, app, node }),
  fc.record({ kind: fc.constant('label' as const), pod: podIndex, app }),
  fc.record({ kind: fc.constant('node' as const), pod: podIndex, node }),
  fc.record({ kind: fc.constant('delete' as const), pod: podIndex }),
);

const mergePatch = { 'content-type': 'application/merge-patch+json' };
const name = (i: number) => `p${i}`;

function podOf(n: string, s: PodState) {
  const p = pod(n, {}, { app: s.app }) as ReturnType<typeof pod> & {
    spec: Record<string, unknown>;
  };
  p.spec.nodeName = s.node;
  return p;
}

let run = 0;

t.test('the HTTP watch delivers what the model computes', async (t) => {
  const s: KubeServer = await startKube(t.testdir());
  t.teardown(() => s.close());
  await fc.assert(
    fc.asyncProperty(
      fc.array(op, { minLength: 1, maxLength: 12 }),
      fc.constantFrom(...(Object.keys(labelSelectors) as (keyof typeof labelSelectors)[])),
      fc.option(node, { nil: undefined }),
      fc.boolean(),
      fc.nat(),
      async (ops, labelKey, nodeSel, fromZero, cut) => {
        const ns = `m${++run}`;
        const created = await call(s.url, 'POST', '/api/v1/namespaces', {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: ns },
        });
        if (created.status !== 201) throw new Error(created.text);
        const base = `/api/v1/namespaces/${ns}/pods`;
        const sel = labelSelectors[labelKey];
        const matches = (p: PodState | undefined) =>
          p !== undefined && sel.matches(p.app) && (nodeSel === undefined || p.node === nodeSel);

        const state = new Map<number, PodState>();
        const expected: string[] = [];
        const startAt = cut % (ops.length + 1);
        let watchFrom = '';

        const apply = async (o: Op, watching: boolean): Promise<void> => {
          const before = state.get(o.pod);
          let after: PodState | undefined;
          let rv: string | undefined;
          if (o.kind === 'create') {
            if (before) return;
            after = { app: o.app, node: o.node };
            const r = await call(s.url, 'POST', base, podOf(name(o.pod), after));
            if (r.status !== 201) throw new Error(r.text);
            rv = r.body.metadata.resourceVersion;
          } else if (o.kind === 'delete') {
            if (!before) return;
            const r = await call(s.url, 'DELETE', `${base}/${name(o.pod)}`);
            if (r.status !== 200) throw new Error(r.text);
          } else {
            if (!before) return;
            after = o.kind === 'label' ? { ...before, app: o.app } : { ...before, node: o.node };
            const patch =
              o.kind === 'label'
                ? { metadata: { labels: { app: o.app } } }
                : { spec: { nodeName: o.node } };
            const r = await call(s.url, 'PATCH', `${base}/${name(o.pod)}`, patch, mergePatch);
            if (r.status !== 200) throw new Error(r.text);
            // An update that changes nothing writes nothing (as kube-apiserver): no event.
            if (after.app === before.app && after.node === before.node) return;
            rv = r.body.metadata.resourceVersion;
          }
          if (after) state.set(o.pod, after);
          else state.delete(o.pod);
          if (!watching) return;
          const was = matches(before);
          const is = matches(after);
          // What the event carries: the new state, or the last matching one when leaving.
          const shown = is ? after : before;
          const type = is ? (was ? 'MODIFIED' : 'ADDED') : was ? 'DELETED' : undefined;
          if (type === undefined || shown === undefined) return;
          // A delete's revision is not in its answer: only the others are compared.
          const at = rv === undefined ? '?' : rv;
          expected.push(`${type} ${name(o.pod)} ${shown.app} ${shown.node} @${at}`);
        };

        for (const o of ops.slice(0, startAt)) await apply(o, false);
        if (fromZero) {
          watchFrom = '0';
          for (const [i, p] of [...state].sort(([a], [b]) => a - b)) {
            if (matches(p)) expected.push(`ADDED ${name(i)} ${p.app} ${p.node} @?`);
          }
        } else {
          // After the last write so far (a delete's revision is in no answer: ask a list).
          const list = await call(s.url, 'GET', base);
          watchFrom = String(list.body.metadata.resourceVersion);
        }
        const query = new URLSearchParams({ watch: '1', resourceVersion: watchFrom });
        if (sel.query !== '') query.set('labelSelector', sel.query);
        if (nodeSel !== undefined) query.set('fieldSelector', `spec.nodeName=${nodeSel}`);
        const w = await openWatch(s.url, `${base}?${query}`);
        try {
          for (const o of ops.slice(startAt)) await apply(o, true);
          const end = { app: sel.sentinel, node: nodeSel ?? 'n1' };
          const r = await call(s.url, 'POST', base, podOf('zz-end', end));
          if (r.status !== 201) throw new Error(r.text);
          const done = await w.waitFor((es) =>
            es.some((e) => e.type === 'ADDED' && e.object.metadata.name === 'zz-end'),
          );
          if (!done) throw new Error(`no end marker: ${JSON.stringify(w.events)}`);
          const got = w.events
            .filter((e) => e.object.metadata.name !== 'zz-end')
            .map((e) => {
              const m = e.object.metadata;
              const shown = `${e.type} ${m.name} ${m.labels?.app} ${e.object.spec?.nodeName}`;
              return { shown, rv: String(m.resourceVersion) };
            });
          const want = expected.map((x) => x.split(' @'));
          t.same(
            got.map((g) => g.shown),
            want.map(([shown]) => shown),
            `${labelKey} ${nodeSel ?? ''} from ${watchFrom}`,
          );
          for (let i = 0; i < want.length; i++) {
            const rv = want[i]![1];
            if (rv !== '?' && got[i] !== undefined && got[i]!.rv !== rv) {
              throw new Error(`event ${i} at ${got[i]!.rv}, expected ${rv}`);
            }
          }
        } finally {
          w.close();
        }
      },
    ),
    { numRuns: 25 },
  );
});
