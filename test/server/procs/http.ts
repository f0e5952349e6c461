/** The etcd v3 JSON API as the multi-process tests use it: plain fetch, base64, no retries. */
export const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
export const unb64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** POSTs a JSON body; network failures come back as status 0. */
export async function post(
  base: string,
  path: string,
  body: unknown,
  timeoutMs = 5000,
): Promise<Answer> {
  try {
    const res = await fetch(new URL(path, base), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  } catch (e) {
    return { status: 0, body: { error: String(e) } };
  }
}

export async function put(
  base: string,
  key: string,
  value: string,
  timeoutMs?: number,
): Promise<Answer> {
  return post(base, '/v3/kv/put', { key: b64(key), value: b64(value) }, timeoutMs);
}

/** Every key-value with `prefix`, as a map (linearizable unless `serializable`). */
export async function prefixMap(
  base: string,
  prefix: string,
  serializable = false,
): Promise<Map<string, string> | undefined> {
  const end = Buffer.from(prefix, 'utf8');
  end[end.length - 1]! += 1;
  const a = await post(base, '/v3/kv/range', {
    key: b64(prefix),
    range_end: end.toString('base64'),
    serializable,
  });
  if (a.status !== 200) return undefined;
  const kvs = (a.body.kvs as Array<{ key: string; value?: string }> | undefined) ?? [];
  return new Map(kvs.map((kv) => [unb64(kv.key), unb64(kv.value ?? '')]));
}

export interface Status {
  memberId: string;
  leader: string;
  raftAppliedIndex: number;
}

export async function status(base: string, timeoutMs = 1000): Promise<Status | undefined> {
  const a = await post(base, '/v3/maintenance/status', {}, timeoutMs);
  if (a.status !== 200) return undefined;
  const header = a.body.header as { member_id?: string };
  return {
    memberId: header.member_id ?? '0',
    leader: String(a.body.leader ?? '0'),
    raftAppliedIndex: Number(a.body.raftAppliedIndex ?? 0),
  };
}
