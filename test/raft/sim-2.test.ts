/**
 * The deterministic simulator, part 2 of 4 of the CI seeds (see test/raft/sim/suite.ts).
 * Replay one seed: SIM_SEED=1234 npx tap test/raft/sim-1.test.ts, or npm run sim -- --seed 1234
 */
import t from 'tap';
import { runPart } from './sim/suite.js';

runPart(t, 2, 4);
