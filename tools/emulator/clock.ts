// The emulator's sense of time. Everything in the emulated world (operation
// durations, autosuspend, timestamps) reads this clock, so tests and sandboxes
// can run the world faster than real time, or step it by hand.

export interface Clock {
  /** Emulated wall-clock time, in milliseconds since the epoch. */
  now(): number;
}

export interface ClockOptions {
  /** How many emulated milliseconds pass per real millisecond (default 1). */
  speed?: number;
  /** Emulated time at the moment the clock is created (default: the real time). */
  startAt?: number;
}

/** Real time, optionally sped up. */
export function createClock(options: ClockOptions = {}): Clock {
  const speed = options.speed ?? 1;
  if (!(speed > 0) || !Number.isFinite(speed)) throw new RangeError(`clock speed must be > 0, got ${speed}`);
  const realStart = performance.now();
  const emulatedStart = options.startAt ?? Date.now();
  return { now: () => emulatedStart + (performance.now() - realStart) * speed };
}

export interface ManualClock extends Clock {
  /** Moves emulated time forward; the world catches up on its next request. */
  advance(ms: number): void;
}

/** Time that moves only when told: for tests that step through a lifecycle. */
export function createManualClock(startAt = Date.UTC(2026, 0, 1)): ManualClock {
  let now = startAt;
  return {
    now: () => now,
    advance(ms) {
      if (ms < 0) throw new RangeError("time does not go backwards");
      now += ms;
    },
  };
}
