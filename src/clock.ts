/**
 * Time as toolgate reads it: the wall clock of deadlines, leases, TTLs and
 * expiries, and the timers that act on them. One clock is built with the
 * services and handed to every part that keeps time, so a test can put a
 * clock it moves by hand in its place (test/clock.ts) instead of
 * sleeping. Durations measured for metrics and logs are not the clock's:
 * they read `performance.now()`, which no test needs to move.
 */

/** A timer the clock started, for cancelling it. */
export type TimerHandle = unknown

export interface Clock {
  /** Wall time, epoch milliseconds. */
  now (): number
  /** Calls `fn` once, `ms` from now. A timer alone never keeps the process up. */
  setTimeout (fn: () => void, ms: number): TimerHandle
  clearTimeout (handle: TimerHandle): void
  /** Calls `fn` every `ms`. A timer alone never keeps the process up. */
  setInterval (fn: () => void, ms: number): TimerHandle
  clearInterval (handle: TimerHandle): void
}

/** The process's own clock and timers. */
export const systemClock: Clock = {
  now: Date.now,
  setTimeout (fn, ms) {
    return setTimeout(fn, ms).unref()
  },
  clearTimeout (handle) {
    clearTimeout(handle as NodeJS.Timeout)
  },
  setInterval (fn, ms) {
    return setInterval(fn, ms).unref()
  },
  clearInterval (handle) {
    clearInterval(handle as NodeJS.Timeout)
  }
}

/** `clock.now` as a plain function (the system clock's is `Date.now` itself, unwrapped). */
export function clockReader (clock: Pick<Clock, 'now'> | undefined): () => number {
  if (clock === undefined || clock.now === Date.now) return Date.now
  return () => clock.now()
}
