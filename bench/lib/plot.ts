/**
 * A self-contained HTML page with line plots of latency percentiles (log scale) against a
 * count (linear), one colour per system and one dash pattern per percentile, plus tables of
 * the numbers. The plots are the member dashboard's (uPlot and its plots.js, inlined into the
 * page by `inlinePlotting`), with an inline SVG of the same data for readers without scripts.
 * No external assets: the file opens anywhere.
 */
import { inlinePlotting } from '../../src/api/dashboard/assets.js';

export interface PlotPoint {
  x: number;
  p50: number;
  p99: number;
  p999: number;
}

export interface PlotSeries {
  label: string;
  color: string;
  points: PlotPoint[];
}

export interface HtmlTable {
  title: string;
  header: string[];
  rows: string[][];
}

const W = 760;
const H = 420;
const M = { left: 70, right: 170, top: 30, bottom: 50 };
const PERCENTILES = [
  { key: 'p50', label: 'p50', dash: '' },
  { key: 'p99', label: 'p99', dash: '8 4' },
  { key: 'p999', label: 'p99.9', dash: '2 3' },
] as const;

function esc(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/** The SVG: x linear from 0 to the largest x, y log10 over whole decades around the data. */
export function latencySvg(title: string, xLabel: string, series: PlotSeries[]): string {
  const xs = series.flatMap((s) => s.points.map((p) => p.x));
  const ys = series
    .flatMap((s) => s.points.flatMap((p) => [p.p50, p.p99, p.p999]))
    .filter((v) => v > 0);
  if (xs.length === 0 || ys.length === 0) return `<p>${esc(title)}: no data</p>`;
  const xMax = Math.max(...xs) * 1.05;
  const yLo = Math.floor(Math.log10(Math.min(...ys)));
  const yHi = Math.max(yLo + 1, Math.ceil(Math.log10(Math.max(...ys))));
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const px = (x: number) => M.left + (x / xMax) * pw;
  const py = (y: number) =>
    M.top + ph - ((Math.log10(Math.max(y, 10 ** yLo)) - yLo) / (yHi - yLo)) * ph;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<text x="${M.left}" y="18" font-size="14" font-weight="bold">${esc(title)}</text>`,
    `<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`,
  ];
  for (let d = yLo; d <= yHi; d++) {
    const y = py(10 ** d);
    const label = 10 ** d >= 1000 ? `${10 ** (d - 3)} s` : `${10 ** d} ms`;
    out.push(`<line x1="${M.left}" x2="${M.left + pw}" y1="${y}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${M.left - 6}" y="${y + 4}" text-anchor="end">${label}</text>`);
  }
  for (const x of [...new Set(xs)].sort((a, b) => a - b)) {
    out.push(`<line x1="${px(x)}" x2="${px(x)}" y1="${M.top}" y2="${M.top + ph}" stroke="#eee"/>`);
    out.push(
      `<text x="${px(x)}" y="${M.top + ph + 16}" text-anchor="middle">${x.toLocaleString('en')}</text>`,
    );
  }
  out.push(`<text x="${M.left + pw / 2}" y="${H - 10}" text-anchor="middle">${esc(xLabel)}</text>`);
  out.push(
    `<text transform="translate(16 ${M.top + ph / 2}) rotate(-90)" text-anchor="middle">latency (log)</text>`,
  );
  let legendY = M.top + 10;
  for (const s of series) {
    const pts = [...s.points].sort((a, b) => a.x - b.x);
    for (const p of PERCENTILES) {
      const path = pts.map(
        (pt, i) => `${i === 0 ? 'M' : 'L'}${px(pt.x).toFixed(1)},${py(pt[p.key]).toFixed(1)}`,
      );
      out.push(
        `<path d="${path.join(' ')}" fill="none" stroke="${s.color}" stroke-width="2" stroke-dasharray="${p.dash}"/>`,
      );
      for (const pt of pts)
        out.push(
          `<circle cx="${px(pt.x).toFixed(1)}" cy="${py(pt[p.key]).toFixed(1)}" r="3" fill="${s.color}"/>`,
        );
      const lx = M.left + pw + 12;
      out.push(
        `<line x1="${lx}" x2="${lx + 28}" y1="${legendY}" y2="${legendY}" stroke="${s.color}" stroke-width="2" stroke-dasharray="${p.dash}"/>`,
      );
      out.push(`<text x="${lx + 34}" y="${legendY + 4}">${esc(s.label)} ${p.label}</text>`);
      legendY += 18;
    }
  }
  out.push('</svg>');
  return out.join('\n');
}

/**
 * The same plot drawn in the page by the dashboard's plotting code (plots.js over uPlot),
 * the SVG as its fallback where scripts do not run.
 */
export function latencyChart(
  id: string,
  title: string,
  xLabel: string,
  series: PlotSeries[],
): string {
  const dashes: Record<string, number[] | undefined> = {
    p50: undefined,
    p99: [8, 4],
    p999: [2, 3],
  };
  const lines = series.flatMap((s) =>
    PERCENTILES.map((p) => ({
      label: `${s.label} ${p.label}`,
      color: s.color,
      dash: dashes[p.key],
      points: s.points.filter((pt) => pt[p.key] > 0).map((pt) => [pt.x, pt[p.key]]),
    })),
  );
  const spec = {
    title,
    xLabel,
    yLabel: 'ms',
    logY: true,
    width: W,
    height: H,
    series: lines.map(({ label, color, dash }) => ({ label, color, dash })),
  };
  // JSON inside a script element: no `<` may end it early.
  const json = (v: unknown) => JSON.stringify(v).replace(/</g, '\\u003c');
  return [
    `<div id="${esc(id)}"></div>`,
    `<noscript>${latencySvg(title, xLabel, series)}</noscript>`,
    '<script>',
    `etceteraPlots.lineChart(document.getElementById(${json(id)}), ${json(spec)},`,
    `  etceteraPlots.mergeColumns(${json(lines.map((l) => l.points))}));`,
    '</script>',
  ].join('\n');
}

export function htmlPage(
  title: string,
  intro: string[],
  svgs: string[],
  tables: HtmlTable[],
): string {
  const table = (t: HtmlTable) =>
    [
      `<h2>${esc(t.title)}</h2>`,
      '<table>',
      `<tr>${t.header.map((h) => `<th>${esc(h)}</th>`).join('')}</tr>`,
      ...t.rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`),
      '</table>',
    ].join('\n');
  return [
    '<!doctype html>',
    `<html><head><meta charset="utf-8"><title>${esc(title)}</title>`,
    '<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}',
    'td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}</style>',
    inlinePlotting(),
    '</head><body>',
    `<h1>${esc(title)}</h1>`,
    ...intro.map((p) => `<p>${esc(p)}</p>`),
    ...svgs,
    ...tables.map(table),
    '</body></html>',
  ].join('\n');
}
