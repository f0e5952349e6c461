/**
 * `etcetera certs --dir DIR [--hosts 127.0.0.1,localhost] [--members m1,m2,m3] [--clients root]`:
 * writes a CA and certificates for a local TLS cluster (src/server/certs.ts), named as etcd's
 * docs name them: ca.crt (and ca.key), <member>.crt / <member>.key for each member (server and
 * client usage, valid for --hosts), <client>.crt / <client>.key for each client (client usage,
 * CN = the client's name, which is the user under --client-cert-auth and --client-cert-auth's
 * or --client-ca-file's Kubernetes user; `name/group/...` adds each group as an O, the
 * Kubernetes groups, e.g. `admin/system:masters`). Keys are written
 * readable by the owner only. An existing file in DIR is never overwritten: the command
 * refuses and writes nothing.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { EtceteraError } from '../errors.js';
import { createCa, issue, type PemPair } from '../server/certs.js';

export const CERTS_USAGE = `Usage: etcetera certs --dir DIR [--hosts H,...] [--members M,...] [--clients C,...]

Writes a CA and certificates for a local TLS cluster into DIR:
  ca.crt, ca.key            the CA (give ca.crt to --trusted-ca-file, --peer-trusted-ca-file
                            and to clients as --cacert)
  <member>.crt/.key         one per member: server and client usage, valid for --hosts
  <client>.crt/.key         one per client: client usage, CN = the name
  --hosts                   host names and IP addresses of the members (default 127.0.0.1,localhost)
  --members                 member names (default m1,m2,m3)
  --clients                 client names (default root); NAME/GROUP/... also writes each GROUP
                            as an O (the Kubernetes groups): --clients root,admin/system:masters
  --days                    validity in days (default 365; the CA 10 years)
`;

function bad(detail: string): EtceteraError {
  return new EtceteraError('ERR_INVALID_ARGUMENT', { detail });
}

function names(flag: string, text: string): string[] {
  const list = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  for (const n of list)
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(n))
      throw bad(`--${flag}: ${JSON.stringify(n)} is not a name (letters, digits, . _ -)`);
  return list;
}

/** Runs the command; returns the files written. Throws ERR_INVALID_ARGUMENT on bad input. */
export async function runCerts(args: readonly string[]): Promise<string[]> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        dir: { type: 'string' },
        hosts: { type: 'string', default: '127.0.0.1,localhost' },
        members: { type: 'string', default: 'm1,m2,m3' },
        clients: { type: 'string', default: 'root' },
        days: { type: 'string', default: '365' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    throw bad((e as Error).message);
  }
  const dir = values.dir;
  if (typeof dir !== 'string' || dir === '') throw bad('certs needs --dir');
  const hosts = String(values.hosts)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (hosts.length === 0) throw bad('--hosts needs at least one host');
  const members = names('members', String(values.members));
  const groupsOf = new Map<string, string[]>();
  const clients = names(
    'clients',
    String(values.clients)
      .split(',')
      .map((entry) => {
        const [name = '', ...groups] = entry.trim().split('/');
        if (groups.some((g) => g.trim() === ''))
          throw bad(`--clients: ${JSON.stringify(entry.trim())} has an empty group`);
        if (groups.length > 0) groupsOf.set(name, groups);
        return name;
      })
      .join(','),
  );
  const days = Number(values.days);
  if (!Number.isSafeInteger(days) || days <= 0) throw bad('--days must be a positive integer');
  const all = ['ca', ...members, ...clients];
  const dup = all.find((n, i) => all.indexOf(n) !== i);
  if (dup !== undefined) throw bad(`${JSON.stringify(dup)} is named twice`);
  const files = all.flatMap((n) => [join(dir, `${n}.crt`), join(dir, `${n}.key`)]);
  const existing = files.filter((f) => existsSync(f));
  if (existing.length > 0) throw bad(`${existing.join(', ')} already exist; nothing written`);

  const ca = await createCa();
  const out = new Map<string, PemPair>([['ca', ca]]);
  for (const m of members)
    out.set(m, await issue(ca, { commonName: m, hosts, usage: 'server', days }));
  for (const c of clients)
    out.set(
      c,
      await issue(ca, {
        commonName: c,
        usage: 'client',
        days,
        ...(groupsOf.has(c) ? { organizations: groupsOf.get(c) } : {}),
      }),
    );
  await mkdir(dir, { recursive: true });
  for (const [n, pair] of out) {
    await writeFile(join(dir, `${n}.crt`), pair.cert, { flag: 'wx' });
    await writeFile(join(dir, `${n}.key`), pair.key, { flag: 'wx', mode: 0o600 });
    await chmod(join(dir, `${n}.key`), 0o600);
  }
  return files;
}
