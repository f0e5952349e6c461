/**
 * The fan-out report's page (bench/lib/plot.ts) draws with the dashboard's plotting code:
 * uPlot and plots.js inlined (no external script), the chart's data in the page, a label that
 * looks like a closing tag cannot end the script early, and the SVG stays as the fallback.
 */
import t from 'tap';
import { htmlPage, latencyChart } from '../../bench/lib/plot.js';

t.test('the report inlines the dashboard plots and its data', async (t) => {
  const page = htmlPage(
    'report',
    ['intro'],
    [
      latencyChart('c1', 'latency', 'watchers', [
        {
          label: 'etcetera</script><b>',
          color: '#1f77b4',
          points: [
            { x: 1000, p50: 1.5, p99: 4, p999: 9 },
            { x: 5000, p50: 2.5, p99: 8, p999: 20 },
          ],
        },
      ]),
    ],
    [],
  );
  t.notMatch(page, /<script[^>]+src=/, 'no external script');
  t.match(page, /uPlot/, 'uPlot inlined');
  t.match(page, /window\.etceteraPlots = /, "the dashboard's plots.js inlined");
  t.match(page, /etceteraPlots\.mergeColumns\(\[\[\[1000,1\.5\],\[5000,2\.5\]\]/, 'the p50 points');
  t.equal(
    page.split('</script>').length - 1,
    page.split('<script>').length - 1,
    'every script closes once',
  );
  t.notMatch(page, /etcetera<\/script><b>/, 'the label cannot close the script');
  t.match(page, /<noscript><svg/, 'the SVG as the fallback');
});
