/**
 * A real JSON-gateway client against a real member: Python's etcd3gw (Debian's
 * python3-etcd3gw) in a python3 child process puts, gets, and watches a prefix and must see
 * the watch's events. etcd3gw reads a watch chunk by chunk (requests' iter_content with no
 * chunk size) and parses each chunk as one JSON response, so it only works when every watch
 * response is exactly one HTTP chunk, as etcd's gateway writes it.
 *
 * etcd3gw does not probe the server's version; its api_path defaults to /v3alpha/ and the
 * test points it at /v3/. Skipped, with the reason, when no python3 can import etcd3gw.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startMember } from './servers.js';

const PYTHONS = ['python3', '/usr/bin/python3'];

/** A python3 that imports etcd3gw, or why there is none. */
function findPython(): { python: string } | { why: string } {
  const tried: string[] = [];
  for (const python of PYTHONS) {
    const r = spawnSync(python, ['-c', 'import etcd3gw'], { encoding: 'utf8' });
    if (r.status === 0) return { python };
    tried.push(`${python}: ${r.error ? r.error.message : r.stderr.trim().split('\n').at(-1)}`);
  }
  return { why: `python3 -c 'import etcd3gw' failed (${tried.join('; ')})` };
}

const SCRIPT = `
import json, os, sys, threading
from etcd3gw.client import Etcd3Client

def give_up():
    print(json.dumps({"error": "no watch events within 90 s"}), flush=True)
    os._exit(2)

guard = threading.Timer(90, give_up)
guard.daemon = True
guard.start()
c = Etcd3Client(host="127.0.0.1", port=int(sys.argv[1]), api_path="/v3/", timeout=10)
c.put("gw/a", "one")
got = [v.decode() for v in c.get("gw/a")]
events, cancel = c.watch_prefix("gw/")
c.put("gw/b", "two")
c.put("gw/a", "three")
c.delete("gw/b")
seen = []
for ev in events:
    kv = ev["kv"]
    seen.append([ev.get("type", "PUT"), kv["key"].decode(), kv.get("value", b"").decode()])
    if len(seen) == 3:
        break
cancel()
print(json.dumps({"get": got, "events": seen}), flush=True)
os._exit(0)
`;

const found = findPython();

t.test(
  'etcd3gw: put, get, and a watch that sees its events',
  { skip: 'why' in found ? found.why : false },
  async (t) => {
    if ('why' in found) return;
    const dir = await mkdtemp(join(tmpdir(), 'etcetera-etcd3gw-'));
    const member = await startMember(dir);
    t.teardown(async () => {
      await member.close();
      await rm(dir, { recursive: true, force: true });
    });
    const port = new URL(member.url).port;
    const child = spawn(found.python, ['-c', SCRIPT, port], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    t.equal(code, 0, `etcd3gw exited 0 (stderr: ${err.trim() || 'none'})`);
    const result = JSON.parse(out.trim().split('\n').at(-1) ?? '{}');
    t.same(result.get, ['one'], 'get returned the put value');
    t.same(
      result.events,
      [
        ['PUT', 'gw/b', 'two'],
        ['PUT', 'gw/a', 'three'],
        ['DELETE', 'gw/b', ''],
      ],
      'the watch saw every event, in order',
    );
  },
);
