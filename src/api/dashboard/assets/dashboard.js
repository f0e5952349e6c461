/*
 * The member's dashboard page: asks /dashboard/stats once a second and shows the members, the
 * store's figures, the watchers and two live plots (plots.js, uPlot). State for a test or a
 * curious console is on `window.etceteraDashboard` (the latest stats and the two charts).
 */
(() => {
  const PERIOD_MS = 1000;
  const { lineChart, update, fmt } = window.etceteraPlots;
  const $ = (id) => document.getElementById(id);
  const state = { stats: null, charts: {}, updates: 0 };
  window.etceteraDashboard = state;

  const bytes = (n) => {
    if (n === null || n === undefined) return '–';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let v = n;
    let i = 0;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
  };
  const int = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en'));

  function cell(row, text, className) {
    const td = document.createElement('td');
    td.textContent = text;
    if (className) td.className = className;
    row.appendChild(td);
    return td;
  }

  function rows(tbody, items, fill) {
    const fresh = document.createElement('tbody');
    for (const item of items) {
      const tr = document.createElement('tr');
      fill(tr, item);
      fresh.appendChild(tr);
    }
    tbody.replaceWith(fresh);
  }

  function showMembers(members) {
    rows($('members').tBodies[0], members, (tr, m) => {
      tr.dataset.member = m.name;
      tr.dataset.leader = String(m.leader);
      tr.dataset.healthy = String(m.healthy);
      if (m.leader) tr.classList.add('leader');
      cell(tr, m.self ? `${m.name} (this member)` : m.name);
      cell(tr, m.id);
      const role = cell(tr, '');
      if (m.leader) {
        const b = document.createElement('span');
        b.className = 'badge leader';
        b.textContent = 'leader';
        role.appendChild(b);
      } else role.textContent = m.isLearner ? 'learner' : 'follower';
      cell(tr, int(m.term));
      cell(tr, int(m.appliedIndex));
      cell(tr, int(m.revision));
      cell(tr, bytes(m.dbSize));
      cell(
        tr,
        m.healthy ? 'healthy' : `unhealthy: ${m.reason}`,
        m.healthy ? 'healthy' : 'unhealthy',
      );
    });
  }

  function showWatch(w) {
    $('watchers').textContent = int(w.watchers);
    $('slow-now').textContent = int(w.slowNow);
    rows($('watch-kinds').tBodies[0], w.byKind, (tr, k) => {
      cell(tr, k.kind);
      cell(tr, int(k.connections));
      cell(tr, int(k.watchers));
      cell(tr, k.connections > 0 ? fmt(k.watchers / k.connections) : '–');
    });
    const ended = Object.entries(w.ended).filter(([, n]) => n > 0);
    rows($('watch-ended').tBodies[0], ended, (tr, [reason, n]) => {
      cell(tr, reason);
      cell(tr, int(n));
    });
  }

  function showPlots(series) {
    const latency = [series.t, series.p50Ms, series.p99Ms];
    const rates = [series.t, series.writesPerS, series.eventsPerS];
    const width = Math.min(640, Math.max(320, (document.body.clientWidth - 60) / 2));
    if (state.charts.latency === undefined) {
      state.charts.latency = lineChart(
        $('latency-plot'),
        {
          title: 'watch dispatch latency (ms, log scale)',
          yLabel: 'ms',
          time: true,
          logY: true,
          width,
          series: [
            { label: 'p50', color: '#1f77b4' },
            { label: 'p99', color: '#d62728', dash: [8, 4] },
          ],
        },
        latency,
      );
      state.charts.rates = lineChart(
        $('rate-plot'),
        {
          title: 'writes and events delivered per second',
          yLabel: 'per second',
          time: true,
          width,
          series: [
            { label: 'writes/s', color: '#2ca02c' },
            { label: 'events/s', color: '#9467bd' },
          ],
        },
        rates,
      );
    } else {
      update(state.charts.latency, latency);
      update(state.charts.rates, rates);
    }
  }

  function show(s) {
    state.stats = s;
    showMembers(s.members);
    $('revision').textContent = int(s.store.revision);
    $('compact-revision').textContent = int(s.store.compactRevision);
    $('db-size').textContent = bytes(s.store.dbSize);
    $('writes-per-s').textContent = fmt(s.writesPerS);
    $('events-per-s').textContent = fmt(s.eventsPerS);
    showWatch(s.watch);
    showPlots(s.series);
    state.updates++;
    const status = $('status');
    status.textContent = `updated ${new Date(s.at).toLocaleTimeString()}`;
    status.classList.remove('stale');
  }

  async function poll() {
    try {
      const res = await fetch('/dashboard/stats', { cache: 'no-store' });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      show(await res.json());
    } catch (e) {
      const status = $('status');
      status.textContent = `no answer from the member (${e.message}); retrying`;
      status.classList.add('stale');
    } finally {
      setTimeout(poll, PERIOD_MS);
    }
  }

  poll();
})();
