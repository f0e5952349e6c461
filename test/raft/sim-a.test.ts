/**
 * The deterministic simulator, first half of the CI seeds (see test/raft/sim/suite.ts).
 * Replay one seed: SIM_SEED=1234 npx tap test/raft/sim-a.test.ts, or npm run sim -- --seed 1234
 */
import t from 'tap';
import { runSeeds, seedsFor } from './sim/suite.js';

runSeeds(t, seedsFor(1, 2));
