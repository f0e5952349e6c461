/**
 * End to end with the official Kubernetes Python client (Debian's python3-kubernetes), run as
 * a child process against a member: create a namespace and a configmap, list, watch from the
 * list's resourceVersion (the client sends `watch=True`) and read `/version/`. Skipped, with
 * the reason printed, when no python3 on the machine can import `kubernetes`.
 */
import { execFile, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startSingle } from '../server/helpers.js';

/** A python3 that has the `kubernetes` package: the one on PATH, else the system's. */
function findPython(): { python?: string; reason: string } {
  const reasons: string[] = [];
  for (const python of ['python3', '/usr/bin/python3']) {
    const r = spawnSync(python, ['-c', 'import kubernetes'], { encoding: 'utf8' });
    if (r.status === 0) return { python, reason: '' };
    reasons.push(
      `${python}: ${r.error ? String(r.error) : (r.stderr.trim().split('\n').pop() ?? '')}`,
    );
  }
  return { reason: reasons.join('; ') };
}

const SCRIPT = `
import json, sys
from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
meta = client.V1ObjectMeta
v1.create_namespace(client.V1Namespace(metadata=meta(name="py")))
v1.create_namespaced_config_map("py", client.V1ConfigMap(metadata=meta(name="one"), data={"a": "1"}))
listed = v1.list_namespaced_config_map("py")
rv = listed.metadata.resource_version
v1.create_namespaced_config_map("py", client.V1ConfigMap(metadata=meta(name="two"), data={"b": "2"}))
v1.patch_namespaced_config_map("one", "py", {"data": {"a": "changed"}})
events = []
w = watch.Watch()
for e in w.stream(v1.list_namespaced_config_map, "py", resource_version=rv, timeout_seconds=10):
    events.append([e["type"], e["object"].metadata.name, (e["object"].data or {})])
    if len(events) == 2:
        w.stop()
version = client.VersionApi().get_code()
print(json.dumps({
    "listed": [i.metadata.name for i in listed.items],
    "events": events,
    "version": {"major": version.major, "gitVersion": version.git_version},
}))
`;

const found = findPython();
const skip =
  found.python === undefined && `no python3 with the kubernetes package (${found.reason})`;
t.test(
  'the Kubernetes Python client creates, lists, watches and reads the version',
  { skip },
  async (t) => {
    const python = found.python as string;
    const dir = t.testdir();
    const member = await startSingle(join(dir, 'data'));
    t.teardown(() => member.stop());
    const url = String(member.clientUrls[0]).replace(/\/$/, '');
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: t, cluster: {server: "${url}"}}]`,
        'contexts: [{name: t, context: {cluster: t, user: u, namespace: default}}]',
        'users: [{name: u, user: {}}]',
        'current-context: t',
        '',
      ].join('\n'),
    );
    const script = join(dir, 'client.py');
    writeFileSync(script, SCRIPT);
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        python,
        [script, kubeconfig],
        { cwd: dir, env: { ...process.env, HOME: dir }, timeout: 60_000 },
        (err, stdout, stderr) =>
          resolve({
            code: err ? Number((err as { code?: number }).code ?? 1) : 0,
            stdout,
            stderr,
          }),
      );
    });
    t.equal(run.code, 0, run.stderr.slice(-2000));
    const out = JSON.parse(run.stdout.trim().split('\n').pop() ?? '{}');
    t.same(out.listed, ['one']);
    t.same(out.events, [
      ['ADDED', 'two', { b: '2' }],
      ['MODIFIED', 'one', { a: 'changed' }],
    ]);
    t.match(out.version, { major: '1', gitVersion: /^v1\./ });
  },
);
