/**
 * Runs a range of simulator seeds as one tap test. Environment:
 *   SIM_SEED=n    run only seed n (the reproduction of a failure)
 *   SIM_SEEDS=n   total seeds across the CI files (default 300), split between them
 * A failing seed prints itself with the command that replays it.
 */
import type { Test } from 'tap';
import { SIM_OPTIONS } from './options.js';
import { emptyStats, runSeed, type SimStats } from './world.js';

export const DEFAULT_SEEDS = 300;

/** Seeds for part `part` of `parts` (1-based), honouring SIM_SEED / SIM_SEEDS. */
export function seedsFor(part: number, parts: number): number[] {
  const one = process.env.SIM_SEED;
  if (one !== undefined && one !== '') return part === 1 ? [Number(one)] : [];
  const total = Number(process.env.SIM_SEEDS ?? DEFAULT_SEEDS);
  const per = Math.ceil(total / parts);
  const from = 1 + (part - 1) * per;
  const to = Math.min(total, from + per - 1);
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, k) => from + k);
}

export function runSeeds(t: Test, seeds: readonly number[]): void {
  const cpu0 = process.cpuUsage();
  let failed = 0;
  const sum = emptyStats();
  for (const seed of seeds) {
    const r = runSeed(seed, SIM_OPTIONS);
    for (const k of Object.keys(sum) as (keyof SimStats)[]) sum[k] += r.stats[k];
    if (r.ok) continue;
    failed++;
    t.fail(
      `seed ${seed}: ${r.error}\n  reproduce: SIM_SEED=${seed} npx tap test/raft/sim-1.test.ts` +
        `  (or: npm run sim -- --seed ${seed})`,
    );
  }
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  const { members: _, ...totals } = sum;
  t.comment(
    `${seeds.length} seeds x ${(SIM_OPTIONS.durationMs + SIM_OPTIONS.settleMs) / 1000} virtual s: ` +
      `${failed} failed, ${cpuMs.toFixed(0)} ms CPU; totals ${JSON.stringify(totals)}`,
  );
  t.equal(failed, 0, `every seed passes (${seeds[0]}..${seeds[seeds.length - 1]})`);
}

/**
 * Run part `part` of `parts` as the body of a test file. On a loaded machine a part can
 * outlast the suite's per-file timeout although its CPU time is modest, so the limit is
 * raised (the `# timeout=` comment is how a tap child tells its runner).
 */
export function runPart(t: Test, part: number, parts: number): void {
  const seeds = seedsFor(part, parts);
  if (seeds.length === 0) {
    t.skip('SIM_SEED is set: that seed runs in part 1', () => {});
    return;
  }
  t.setTimeout(PART_TIMEOUT_MS);
  t.comment(`timeout=${PART_TIMEOUT_MS}`);
  runSeeds(t, seeds);
}

const PART_TIMEOUT_MS = 900_000;
