/**
 * The live dashboard on the client port (GET only, behind the same Origin and Host checks as
 * every other route):
 *
 *   /dashboard                 the page (assets/index.html)
 *   /dashboard/assets/<name>   its script, style and uPlot (assets.ts; a fixed list)
 *   /dashboard/stats           what the page shows, as JSON; the page asks once a second
 *   /dashboard/member          this member's own figures (other members' dashboards ask it)
 *
 * Cost: a stats request reads a few counters (the watch cache's tally, its metrics) and the
 * member list, plus one cached status call per member a second (members.ts); the time series
 * come from a 1 Hz sampler that runs only while someone looks (sampler.ts). None of it walks
 * the watchers, so an open dashboard leaves the fan-out alone.
 */
import type { Response, Router } from 'express';
import type { Histogram } from 'prom-client';
import type { MemberApi } from '../../server/types.js';
import type { Cacher } from '../../watchcache/index.js';
import { sendJson } from '../respond.js';
import { asset } from './assets.js';
import { MembersView, ownFigures } from './members.js';
import { type Reading, type Sample, Sampler } from './sampler.js';

export const DASHBOARD_PATHS = ['/dashboard', '/dashboard/stats', '/dashboard/member'] as const;

/** Whether a GET-only path belongs to the dashboard. */
export function isDashboardPath(path: string): boolean {
  return (
    (DASHBOARD_PATHS as readonly string[]).includes(path) ||
    path === '/dashboard/' ||
    path.startsWith('/dashboard/assets/')
  );
}

async function histogramBuckets(h: Histogram): Promise<{ le: number; count: number }[]> {
  const { values } = await h.get();
  return values
    .filter((v) => v.metricName?.endsWith('_bucket') && v.labels.le !== undefined)
    .map((v) => ({ le: v.labels.le === '+Inf' ? Infinity : Number(v.labels.le), count: v.value }))
    .sort((a, b) => a.le - b.le);
}

async function counterValue(c: { get(): Promise<{ values: { value: number }[] }> }) {
  return (await c.get()).values[0]?.value ?? 0;
}

function reader(member: MemberApi, cacher: Cacher | undefined): () => Promise<Reading> {
  return async () => ({
    at: Date.now(),
    revision: member.watchSource.currentRevision,
    eventsSent: cacher === undefined ? 0 : await counterValue(cacher.metrics.eventsSent),
    buckets: cacher === undefined ? [] : await histogramBuckets(cacher.metrics.dispatchLatency),
  });
}

/** The samples as columns, as uPlot takes them (times in seconds). */
function columns(samples: readonly Sample[]) {
  return {
    t: samples.map((s) => s.t / 1000),
    writesPerS: samples.map((s) => s.writesPerS),
    eventsPerS: samples.map((s) => s.eventsPerS),
    p50Ms: samples.map((s) => s.p50Ms),
    p99Ms: samples.map((s) => s.p99Ms),
  };
}

function noStore(res: Response): Response {
  return res.setHeader('Cache-Control', 'no-store');
}

export interface Dashboard {
  /** Stops the sampler. */
  close(): void;
}

export function mountDashboard(router: Router, member: MemberApi): Dashboard {
  const cacher = member.watchCache;
  const sampler = new Sampler(reader(member, cacher));
  const view = new MembersView(member);

  const page = (name: string, res: Response, next: (e?: unknown) => void) => {
    asset(name)
      .then((a) => {
        if (a === undefined) {
          res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
          return res.end('404 page not found\n');
        }
        res.writeHead(200, {
          'Content-Type': a.type,
          'Content-Length': a.body.length,
          'X-Content-Type-Options': 'nosniff',
          // Scripts and styles of its own origin only; uPlot sets inline styles on its nodes.
          'Content-Security-Policy':
            "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:",
          'Cache-Control': 'no-cache',
        });
        res.end(a.body);
      })
      .catch(next);
  };
  router.get(['/dashboard', '/dashboard/'], (_req, res, next) => page('index.html', res, next));
  router.get('/dashboard/assets/:name', (req, res, next) =>
    page(String(req.params.name), res, next),
  );
  router.get('/dashboard/member', (_req, res, next) => {
    ownFigures(member)
      .then((f) => sendJson(noStore(res), 200, f))
      .catch(next);
  });
  router.get('/dashboard/stats', (_req, res, next) => {
    sampler.touch();
    (async () => {
      const members = await view.members();
      const self = members.find((m) => m.self);
      const samples = sampler.samples();
      const latest = samples[samples.length - 1];
      const tally = cacher?.tally;
      const body = {
        at: Date.now(),
        self: self?.id ?? member.header().memberId,
        members,
        store: {
          revision: member.watchSource.currentRevision,
          compactRevision: member.watchSource.compactRevision,
          dbSize: self?.dbSize ?? null,
        },
        writesPerS: latest?.writesPerS ?? null,
        eventsPerS: latest?.eventsPerS ?? null,
        watch: {
          watchers: cacher === undefined ? 0 : await counterValue(cacher.metrics.watchers),
          byKind: tally?.byKind() ?? [],
          slowNow: tally?.slowNow ?? 0,
          ended: tally?.ended ?? {},
        },
        series: columns(samples),
      };
      sendJson(noStore(res), 200, body);
    })().catch(next);
  });
  return { close: () => sampler.stop() };
}
