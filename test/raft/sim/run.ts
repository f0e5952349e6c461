/**
 * Command line for the simulator:
 *   npm run sim -- --seed 1234          replay one seed (prints its stats or its failure)
 *   npm run sim -- --from 1 --count 500 run a range of seeds
 */
import { parseArgs } from 'node:util';
import { SIM_OPTIONS } from './options.js';
import { runSeed } from './world.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    from: { type: 'string', default: '1' },
    count: { type: 'string', default: '1' },
  },
});
const seeds =
  values.seed !== undefined
    ? [Number(values.seed)]
    : Array.from({ length: Number(values.count) }, (_, k) => Number(values.from) + k);
let failed = 0;
const t0 = process.hrtime.bigint();
for (const seed of seeds) {
  const r = runSeed(seed, SIM_OPTIONS);
  if (!r.ok) failed++;
  if (!r.ok || seeds.length === 1) {
    console.log(`seed ${seed}: ${r.ok ? 'ok' : `FAILED ${r.error}`} ${JSON.stringify(r.stats)}`);
  }
}
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
console.log(`${seeds.length} seeds, ${failed} failed, ${ms.toFixed(0)} ms`);
process.exitCode = failed > 0 ? 1 : 0;
