/**
 * The fan-out benchmark's output: side-by-side blocks per configuration (etcetera, etcd, ratio
 * etcetera / etcd; with repeats, the median and the min–max spread), the issue's aims checked
 * against the medians, and the HTML page (latency percentiles against watchers, both systems).
 */
import type { RunResult } from './fanout-run.js';
import { type HtmlTable, htmlPage, latencyChart, type PlotSeries } from './lib/plot.js';
import type { System } from './lib/servers.js';

/** Runs of one configuration, per system. */
export interface Group {
  title: string;
  key: string;
  runs: Record<System, RunResult[]>;
}

export function configKey(
  r: Pick<RunResult, 'scenario' | 'watchers' | 'connections' | 'rate'>,
): string {
  return `${r.scenario}/${r.watchers}/${r.connections}/${r.rate}`;
}

/**
 * One group per configuration, and per --workers value when the run had several: each such
 * group holds its etcetera runs and every etcd run of the configuration.
 */
export function groupRuns(runs: RunResult[]): Group[] {
  const groups = new Map<string, Group>();
  const counts = new Set(runs.filter((r) => r.system === 'etcetera').map((r) => r.workers ?? 0));
  const byWorkers = counts.size > 1 || (counts.size === 1 && !counts.has(0));
  const groupOf = (r: RunResult, workers: number | undefined) => {
    const key = `${configKey(r)}${workers === undefined ? '' : `/w${workers}`}`;
    let g = groups.get(key);
    if (g === undefined) {
      const w = workers === undefined ? '' : ` · etcetera --workers ${workers}`;
      const title = `${r.scenario} · ${fmtInt(r.watchers)} watchers · ${fmtInt(r.connections)} connections · ${fmtInt(r.rate)} writes/s · ${r.durationS} s · ${r.valueBytes} B values (${r.layout} prefix)${w}`;
      g = { title, key, runs: { etcetera: [], etcd: [] } };
      groups.set(key, g);
    }
    return g;
  };
  for (const r of runs.filter((x) => x.system === 'etcetera'))
    groupOf(r, byWorkers ? (r.workers ?? 0) : undefined).runs.etcetera.push(r);
  for (const r of runs.filter((x) => x.system === 'etcd')) {
    const same = [...groups.values()].filter((g) => g.key.startsWith(`${configKey(r)}/w`));
    if (byWorkers && same.length > 0) for (const g of same) g.runs.etcd.push(r);
    else groupOf(r, undefined).runs.etcd.push(r);
  }
  return [...groups.values()];
}

function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en');
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return 'n/a';
  if (Math.abs(n) >= 1000) return fmtInt(n);
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toFixed(n === Math.round(n) ? 0 : 2);
}

export function median(xs: number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** "median" or "median (min–max)". */
function spread(xs: number[]): string {
  if (xs.length === 0) return '—';
  const m = fmt(median(xs));
  return xs.length === 1 ? m : `${m} (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))})`;
}

interface Row {
  label: string;
  get: (r: RunResult) => number;
  /** Lower is better (latency, CPU): no ratio is printed for counts that must be 0. */
  ratio?: boolean;
}

const ROWS: Row[] = [
  { label: 'deliveries/s', get: (r) => r.deliveriesPerS, ratio: true },
  {
    label: 'delivered / expected %',
    get: (r) => (100 * r.delivered) / Math.max(1, r.expectedDeliveries),
  },
  { label: 'latency p50 ms', get: (r) => r.latency.p50, ratio: true },
  { label: 'latency p99 ms', get: (r) => r.latency.p99, ratio: true },
  { label: 'latency p99.9 ms', get: (r) => r.latency.p999, ratio: true },
  { label: 'latency max ms', get: (r) => r.latency.max, ratio: true },
  { label: 'lost (gaps)', get: (r) => r.lost },
  { label: 'undelivered at drain limit', get: (r) => r.pending },
  { label: 'duplicated', get: (r) => r.duplicated },
  { label: 'out of order', get: (r) => r.outOfOrder },
  { label: 'watches canceled', get: (r) => r.canceled },
  { label: 'server CPU % of a core', get: (r) => r.server.cpuPct ?? Number.NaN, ratio: true },
  {
    label: 'server CPU µs per delivery',
    get: (r) => ((r.server.cpuSeconds ?? Number.NaN) * 1e6) / Math.max(1, r.delivered),
    ratio: true,
  },
  { label: 'server RSS MiB (peak)', get: (r) => r.server.peakRssMiB, ratio: true },
  {
    label: 'client CPU µs per delivery',
    get: (r) =>
      (r.generators.reduce((a, g) => a + g.cpuSeconds, 0) * 1e6) / Math.max(1, r.delivered),
  },
  {
    label: 'generator CPU % (busiest)',
    get: (r) => Math.max(...r.generators.map((g) => g.cpuPct)),
  },
  {
    label: 'generator loop busy % (busiest)',
    get: (r) => 100 * Math.max(...r.generators.map((g) => g.eventLoopUtilization)),
  },
  { label: 'machine busy % (all cores)', get: (r) => r.machineBusyPct ?? Number.NaN },
  { label: 'writes acked/s', get: (r) => r.acked / r.durationS },
  { label: 'puts failed', get: (r) => r.writeErrors },
  { label: '  committed all the same', get: (r) => r.committedFailed },
  { label: 'put latency p99 ms', get: (r) => r.putLatency.p99, ratio: true },
  { label: 'setup s', get: (r) => r.setupS },
];

export function printGroup(g: Group): string[] {
  const { etcetera, etcd } = g.runs;
  const both = etcetera.length > 0 && etcd.length > 0;
  const lines = [g.title];
  const col = (s: string, w: number) => s.padStart(w);
  lines.push(
    `  ${'metric'.padEnd(32)}${col('etcetera', 26)}${both || etcd.length ? col('etcd', 26) : ''}${both ? col('etcetera/etcd', 15) : ''}`,
  );
  for (const row of ROWS) {
    const a = etcetera.map(row.get);
    const b = etcd.map(row.get);
    let line = `  ${row.label.padEnd(32)}${col(spread(a), 26)}`;
    if (etcd.length > 0) line += col(spread(b), 26);
    if (both && row.ratio) line += col(ratio(median(a), median(b)), 15);
    lines.push(line);
  }
  for (const [name, runs] of [
    ['etcetera', etcetera],
    ['etcd', etcd],
  ] as const) {
    runs.forEach((r, i) => {
      lines.push(
        `  ${name} run ${i + 1}: bottleneck ${r.bottleneck}; load ${r.loadavg.before.map((x) => x.toFixed(1)).join(' ')}`,
      );
      for (const e of r.errors.slice(0, 3)) lines.push(`    error: ${e}`);
    });
  }
  return lines;
}

function ratio(a: number, b: number): string {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return 'n/a';
  return `${(a / b).toFixed(2)}×`;
}

/** The issue's aims, checked on medians. */
export function checkAims(groups: Group[]): string[] {
  const out: string[] = [];
  const find = (scenario: string, watchers: number) =>
    groups.find(
      (g) =>
        (g.runs.etcetera[0] ?? g.runs.etcd[0])?.scenario === scenario &&
        (g.runs.etcetera[0] ?? g.runs.etcd[0])?.watchers === watchers,
    );
  const p99 = (rs: RunResult[]) => median(rs.map((r) => r.latency.p99));
  const line = (ok: boolean, text: string) =>
    out.push(`  ${ok ? 'reached    ' : 'NOT reached'}  ${text}`);
  const latencyAim = (scenario: string, watchers: number, limitMs: number) => {
    const g = find(scenario, watchers);
    if (!g || g.runs.etcetera.length === 0) return;
    const rs = g.runs.etcetera;
    const v = p99(rs);
    const clean = rs.every(
      (r) => r.complete && r.lost + r.pending + r.duplicated + r.outOfOrder === 0,
    );
    line(
      v <= limitMs && clean,
      `${scenario} ${fmtInt(watchers)} watchers: p99 ${fmt(v)} ms ≤ ${fmt(limitMs)} ms${clean ? '' : ' (and every event delivered: NO)'}`,
    );
  };
  latencyAim('broadcast', 1000, 20);
  latencyAim('broadcast', 5000, 100);
  latencyAim('broadcast', 10000, 1000);
  const b10 = find('broadcast', 10000);
  if (b10 && b10.runs.etcetera.length > 0) {
    const rss = Math.max(...b10.runs.etcetera.map((r) => r.server.peakRssMiB));
    line(rss <= 300, `broadcast 10,000 watchers: server RSS peak ${fmt(rss)} MiB ≤ 300 MiB`);
  }
  latencyAim('kubelet', 10000, 10);
  const ceilings = groups.filter(
    (g) => (g.runs.etcetera[0] ?? g.runs.etcd[0])?.scenario === 'ceiling',
  );
  if (ceilings.length > 0) {
    const best = (s: System) =>
      Math.max(0, ...ceilings.map((g) => median(g.runs[s].map((r) => r.deliveriesPerS)) || 0));
    const ours = best('etcetera');
    const theirs = best('etcd');
    const reference = theirs > 0 ? theirs : 900_000;
    line(
      ours >= 2 * reference,
      `ceiling: ${fmtInt(ours)} deliveries/s ≥ 2 × etcd's ${fmtInt(reference)}${theirs > 0 ? ' (this run)' : " (the issue's figure)"}`,
    );
  }
  return out.length > 0 ? ['Aims (issue 4), on medians:', ...out] : [];
}

export function html(groups: Group[], meta: Record<string, unknown>): string {
  const broadcast = groups.filter(
    (g) => (g.runs.etcetera[0] ?? g.runs.etcd[0])?.scenario === 'broadcast',
  );
  const series: PlotSeries[] = [];
  for (const [system, color] of [
    ['etcetera', '#1f77b4'],
    ['etcd', '#d62728'],
  ] as const) {
    const points = broadcast
      .filter((g) => g.runs[system].length > 0)
      .map((g) => {
        const rs = g.runs[system];
        return {
          x: rs[0]!.watchers,
          p50: median(rs.map((r) => r.latency.p50)),
          p99: median(rs.map((r) => r.latency.p99)),
          p999: median(rs.map((r) => r.latency.p999)),
        };
      });
    if (points.length > 0) series.push({ label: system, color, points });
  }
  const tables: HtmlTable[] = groups.map((g) => ({
    title: g.title,
    header: ['metric', 'etcetera', 'etcd'],
    rows: ROWS.map((row) => [
      row.label,
      spread(g.runs.etcetera.map(row.get)),
      spread(g.runs.etcd.map(row.get)),
    ]),
  }));
  const intro = [
    `commit ${meta.commit}, node ${meta.node}, ${meta.etcd ?? 'no etcd'}, ${meta.cpus} CPUs; load average at start ${meta.loadavgStart}.`,
    `command: ${meta.command}`,
    'Latency: from the writer starting a put to a watcher receiving the event (medians over repeats).',
  ];
  return htmlPage(
    'etcetera watch fan-out vs etcd',
    intro,
    [
      latencyChart(
        'broadcast-latency',
        'broadcast: latency percentiles against watchers (100 writes/s)',
        'watchers',
        series,
      ),
    ],
    tables,
  );
}
