// A seedable source of uniform numbers in [0, 1), so a run with random
// operation durations or fault rolls can be repeated exactly from its seed.
import { randomInt } from "node:crypto";

/** A fresh seed for runs that were given none (reported, so the run can be repeated). */
export function newRandomSeed(): number {
  return randomInt(0, 2 ** 32);
}

/**
 * mulberry32: 32 bits of state, full period, good enough for test jitter and
 * fault rolls (not for anything secret).
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}
