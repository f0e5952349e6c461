/** The deterministic simulator, second half of the CI seeds (see test/raft/sim/suite.ts). */
import t from 'tap';
import { runSeeds, seedsFor } from './sim/suite.js';

const seeds = seedsFor(2, 2);
if (seeds.length > 0) runSeeds(t, seeds);
else t.pass('SIM_SEED set: the seed runs in sim-a.test.ts');
