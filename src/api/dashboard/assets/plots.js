/*
 * The plots of the member's dashboard and of the fan-out benchmark's HTML report, on uPlot
 * (loaded before this script as the global `uPlot`). A classic script: it defines
 * `window.etceteraPlots` so that both a served page and a self-contained report can use it.
 *
 *   etceteraPlots.lineChart(element, spec, data) -> the uPlot instance
 *     spec: { title, xLabel, yLabel, time (x is Unix seconds), logY, width, height,
 *             series: [{ label, color, dash (e.g. [8, 4]) }] }
 *     data: [xs, ys1, ys2, ...] (uPlot's columns; null for a missing point)
 *   etceteraPlots.update(chart, data) replaces the data, keeping the chart.
 *   etceteraPlots.mergeColumns(lines) -> data: lines of [x, y] points (x ascending) joined on
 *     one shared x column, null where a line has no point at an x.
 */
(() => {
  const fmt = (v) => {
    if (v === null || v === undefined || !Number.isFinite(v)) return '–';
    const a = Math.abs(v);
    if (a >= 1000) return Math.round(v).toLocaleString('en');
    if (a >= 10) return v.toFixed(1);
    if (a >= 0.01 || a === 0) return v.toFixed(2);
    return v.toPrecision(2);
  };

  function lineChart(el, spec, data) {
    const series = [
      { label: spec.xLabel ?? (spec.time ? 'time' : 'x') },
      ...spec.series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: 2,
        dash: s.dash,
        spanGaps: spec.time !== true,
        points: { show: spec.time !== true },
        value: (_u, v) => fmt(v),
      })),
    ];
    const opts = {
      title: spec.title,
      width: spec.width ?? 640,
      height: spec.height ?? 300,
      series,
      scales: {
        x: { time: spec.time === true },
        y: spec.logY
          ? { distr: 3, log: 10 }
          : { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
      },
      axes: [
        { label: spec.time ? undefined : spec.xLabel },
        { label: spec.yLabel, size: 60, values: (_u, vals) => vals.map(fmt) },
      ],
      legend: { live: true },
    };
    return new uPlot(opts, data, el);
  }

  function update(chart, data) {
    chart.setData(data);
  }

  function mergeColumns(lines) {
    const xs = [...new Set(lines.flatMap((l) => l.map((p) => p[0])))].sort((a, b) => a - b);
    const at = new Map(xs.map((x, i) => [x, i]));
    const cols = lines.map((l) => {
      const ys = xs.map(() => null);
      for (const [x, y] of l) ys[at.get(x)] = y;
      return ys;
    });
    return [xs, ...cols];
  }

  window.etceteraPlots = { lineChart, update, mergeColumns, fmt };
})();
