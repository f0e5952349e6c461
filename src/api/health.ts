/**
 * Health endpoints on the client port:
 *
 *   GET /health                       etcd's: {"health":"true"} (200) or
 *                                     {"health":"false","reason":...} (503);
 *                                     ?serializable=true skips the leader check and reads
 *                                     locally, ?exclude=NOSPACE ignores that alarm
 *   GET /livez, /readyz, /healthz     kube-apiserver's: 200 `ok`; ?verbose lists each check
 *                                     (`[+]name ok`) and ends `livez check passed`; a failing
 *                                     check answers 500 with the list (`[-]name failed:
 *                                     reason withheld`) and `livez check failed`;
 *                                     ?exclude=name leaves a check out
 *   GET /livez/<check>, ...           one check: 200 `ok`, or 500 `internal server error: <why>`
 *
 * The checks are the member's (src/server/health.ts); /healthz runs /readyz's.
 */
import type { Request, Response, Router } from 'express';
import type { NamedCheck } from '../server/health.js';
import type { MemberApi } from '../server/types.js';
import { sendJson } from './respond.js';

const PROBES = ['livez', 'readyz', 'healthz'] as const;
type Probe = (typeof PROBES)[number];

/** Whether a GET-only path belongs to the health endpoints. */
export function isHealthPath(path: string): boolean {
  return path === '/health' || /^\/(livez|readyz|healthz)(\/[^/]+)?$/.test(path);
}

function queryList(req: Request, name: string): string[] {
  const v = req.query[name];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).flatMap((x) => String(x).split(','));
}

function checksOf(member: MemberApi, probe: Probe): readonly NamedCheck[] {
  const p = member.probes;
  if (p !== undefined) return probe === 'livez' ? p.livez : p.readyz;
  // A member without probes (test doubles): its health() stands for readiness.
  const ready: NamedCheck = {
    name: 'leader',
    check: async () => {
      const h = member.health();
      return h.health ? undefined : h.reason;
    },
  };
  const ping: NamedCheck = { name: 'ping', check: async () => undefined };
  return probe === 'livez' ? [ping] : [ping, ready];
}

function text(res: Response, status: number, body: string): void {
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

async function serveProbe(member: MemberApi, probe: Probe, req: Request, res: Response) {
  const exclude = new Set(queryList(req, 'exclude'));
  const checks = checksOf(member, probe).filter((c) => !exclude.has(c.name));
  const results = await Promise.all(checks.map(async (c) => ({ c, why: await c.check() })));
  const lines = results.map(({ c, why }) =>
    why === undefined ? `[+]${c.name} ok\n` : `[-]${c.name} failed: reason withheld\n`,
  );
  if (results.some((r) => r.why !== undefined))
    return text(res, 500, `${lines.join('')}${probe} check failed\n`);
  if (req.query.verbose === undefined) return text(res, 200, 'ok');
  text(res, 200, `${lines.join('')}${probe} check passed\n`);
}

async function serveOne(member: MemberApi, probe: Probe, name: string, res: Response) {
  const check = checksOf(member, probe).find((c) => c.name === name);
  if (check === undefined) return text(res, 404, '404 page not found\n');
  const why = await check.check();
  if (why === undefined) return text(res, 200, 'ok');
  text(res, 500, `internal server error: ${why}\n`);
}

export function mountHealth(router: Router, member: MemberApi): void {
  router.get('/health', (req, res, next) => {
    const serializable = String(req.query.serializable ?? '') === 'true';
    const exclude = queryList(req, 'exclude');
    const answer =
      member.probes?.etcd({ serializable, exclude }) ?? Promise.resolve(member.health());
    answer
      .then((h) => {
        // etcd 3.4 prints health as a string and no reason; the reason (etcd 3.5's) only when unhealthy.
        const body = h.health ? { health: 'true' } : { health: 'false', reason: h.reason };
        sendJson(res, h.health ? 200 : 503, body);
      })
      .catch(next);
  });
  for (const probe of PROBES) {
    router.get(
      `/${probe}`,
      (req, res, next) => void serveProbe(member, probe, req, res).catch(next),
    );
    router.get(
      `/${probe}/:check`,
      (req, res, next) => void serveOne(member, probe, String(req.params.check), res).catch(next),
    );
  }
}
