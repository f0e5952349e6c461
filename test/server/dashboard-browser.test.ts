/**
 * The dashboard in a real browser: Debian's chromium, driven by playwright-core, opens
 * /dashboard on one member of a three-member cluster of child processes. The page shows the
 * three members with the leader (the one every member agrees on) marked, and while a writer
 * runs the plot's data moves: new points arrive and the writes/s line leaves zero. A
 * screenshot is saved as .tap/artifacts/dashboard-browser.png (not committed). Without a
 * browser the test skips, saying why.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { repoPath } from '../paths.js';
import { waitFor } from './helpers.js';
import { ProcCluster } from './procs/cluster.js';
import { compileCli } from './procs/compile.js';
import { put } from './procs/http.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

type Found = { browser: import('playwright-core').Browser } | { why: string };

/** The browser, or why there is none. */
async function launch(): Promise<Found> {
  if (CHROMIUM === undefined)
    return { why: 'no chromium at /usr/bin/chromium (apt-get install chromium)' };
  let chromium: typeof import('playwright-core').chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    return { why: `playwright-core cannot be loaded: ${(e as Error).message}` };
  }
  try {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-background-networking', '--disable-dev-shm-usage'],
    });
    return { browser };
  } catch (e) {
    return { why: `chromium does not start here: ${(e as Error).message.split('\n')[0]}` };
  }
}

/** Read in the page: the rows of the members table and the rates plot's data. */
const READ_STATE = `(() => {
  const d = window.etceteraDashboard;
  const rows = [...document.querySelectorAll('#members tbody tr')];
  const data = d.charts.rates ? d.charts.rates.data : undefined;
  const xs = data ? data[0] : [];
  const writes = data ? data[1] : [];
  return {
    updates: d.updates,
    members: rows.map((r) => ({
      name: r.dataset.member || '',
      leader: r.dataset.leader === 'true',
      healthy: r.dataset.healthy === 'true',
    })),
    points: xs.length,
    lastX: xs.length > 0 ? xs[xs.length - 1] : null,
    lastWrites: writes.length > 0 ? writes[writes.length - 1] : null,
  };
})()`;

interface PlotState {
  updates: number;
  members: { name: string; leader: boolean; healthy: boolean }[];
  points: number;
  lastX: number | null;
  lastWrites: number | null;
}

const found = await launch();
t.test(
  'the dashboard in chromium: members, leader, a moving plot',
  { skip: 'why' in found ? found.why : false },
  async (t) => {
    if (!('browser' in found)) return;
    const browser = found.browser;
    const root = t.testdir();
    const cli = await compileCli();
    const cluster = await ProcCluster.start(
      cli,
      root,
      ['m1', 'm2', 'm3'],
      ['--log-level', 'error'],
    );
    t.teardown(() => cluster.close());
    const leader = await cluster.waitLeader(60_000);

    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`${m.text()} (${m.location().url})`);
    });
    await page.goto(`${cluster.get('m2').client}/dashboard`);

    const state = () => page.evaluate(READ_STATE) as Promise<PlotState>;

    let s: PlotState | undefined;
    await waitFor(
      'three healthy members on the page',
      async () => {
        s = await state();
        return s.members.length === 3 && s.members.every((m) => m.healthy) && s.points > 0;
      },
      30_000,
      100,
    );
    t.same(
      s!.members.map((m) => m.name),
      ['m1', 'm2', 'm3'],
      'three members shown',
    );
    t.same(
      s!.members.filter((m) => m.leader).map((m) => m.name),
      [leader],
      'the leader marked',
    );
    t.equal(await page.locator('#members tr.leader .badge.leader').count(), 1, 'one leader badge');

    const before = s!;
    let stop = false;
    const writer = (async () => {
      for (let i = 0; !stop; i++) await put(cluster.get('m1').client, `w/${i % 10}`, `v${i}`);
    })();
    try {
      await waitFor(
        'the plot to move with the writer',
        async () => {
          s = await state();
          return (
            s.lastX !== null &&
            before.lastX !== null &&
            s.lastX > before.lastX &&
            (s.lastWrites ?? 0) > 0
          );
        },
        30_000,
        200,
      );
    } finally {
      stop = true;
      await writer;
    }
    t.ok(s!.lastX! > before.lastX!, `new points arrived (${before.points} then ${s!.points})`);
    t.ok(s!.lastWrites! > 0, `writes/s on the plot: ${s!.lastWrites}`);
    // Kept after the run (the test's own directory is removed), never committed.
    const artifacts = repoPath('.tap', 'artifacts');
    mkdirSync(artifacts, { recursive: true });
    const shot = join(artifacts, 'dashboard-browser.png');
    await page.screenshot({ path: shot, fullPage: true });
    t.ok(existsSync(shot), `screenshot saved: ${shot}`);
    t.same(errors, [], 'no script errors on the page');
    if (t.passing() === false) t.comment(cluster.logs());
  },
);
if ('browser' in found) t.teardown(() => found.browser.close());
