/**
 * Boolean query parameters read as kube-apiserver's query conversion reads them (the Python
 * client sends `watch=True`): `0` and any case of `false` are false, anything else is true.
 */
import t from 'tap';
import { parseListOptions } from '../../src/api/k8s/list-options.js';

const watchOf = (q: string) => parseListOptions(new URLSearchParams(q)).watch;

t.test('watch flag: any case of true, 1, even empty, is a watch', async (t) => {
  for (const q of ['watch=true', 'watch=True', 'watch=TRUE', 'watch=1', 'watch=', 'watch=yes'])
    t.equal(watchOf(q), true, q);
});

t.test('watch flag: 0 and any case of false are a list', async (t) => {
  for (const q of ['', 'watch=false', 'watch=False', 'watch=FALSE', 'watch=0'])
    t.equal(watchOf(q), false, q || '(absent)');
  const o = parseListOptions(new URLSearchParams('watch=True&allowWatchBookmarks=True'));
  t.equal(o.allowWatchBookmarks, true);
  t.equal(
    parseListOptions(
      new URLSearchParams('sendInitialEvents=False&watch=1&resourceVersionMatch=NotOlderThan'),
    ).sendInitialEvents,
    false,
  );
});
