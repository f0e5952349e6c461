/**
 * The driver's view of time: injected so tests can substitute their own, and so
 * no module reaches for global timers directly.
 */
export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds on a monotonic clock. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  setInterval(fn: () => void, ms: number): TimerHandle;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout(fn, ms) {
    const h = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(h) };
  },
  setInterval(fn, ms) {
    const h = setInterval(fn, ms);
    return { cancel: () => clearInterval(h) };
  },
};
