/** The scenario length every CI seed runs (virtual time). */
import type { SimOptions } from './world.js';

export const SIM_OPTIONS: SimOptions = { durationMs: 200_000, settleMs: 20_000 };
