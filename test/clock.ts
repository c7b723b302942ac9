/**
 * A clock that moves only when a test moves it (src/clock.ts): deadlines,
 * leases, TTLs and expiries are tested by moving it past them, never by
 * sleeping. Timers fire in the order they fall due, each at its own time.
 */
import type { Clock, TimerHandle } from '../src/clock.js'

interface Timer { id: number, at: number, fn: () => void, every: number | null }

export class FakeClock implements Clock {
  #now: number
  #timers: Timer[] = []
  #next = 1

  /** Starts at `start` (epoch ms); by default a fixed time, so that a test reads the same times on every run. */
  constructor (start = 1_900_000_000_000) {
    this.#now = start
  }

  now (): number { return this.#now }

  setTimeout (fn: () => void, ms: number): TimerHandle {
    return this.#add(fn, ms, null)
  }

  clearTimeout (handle: TimerHandle): void {
    this.#timers = this.#timers.filter((t) => t.id !== handle)
  }

  setInterval (fn: () => void, ms: number): TimerHandle {
    return this.#add(fn, ms, Math.max(1, ms))
  }

  clearInterval (handle: TimerHandle): void {
    this.clearTimeout(handle)
  }

  /** Timers waiting (intervals included). */
  get pending (): number { return this.#timers.length }

  /** One-shot timers waiting: what is scheduled beside the app's standing intervals (lease renewal, sweeps). */
  get timeouts (): number { return this.#timers.filter((t) => t.every === null).length }

  /** Moves time on by `ms`, firing every timer due by then, in order, each with the clock at its due time. */
  advance (ms: number): void {
    const until = this.#now + ms
    for (let due = this.#due(until); due !== undefined; due = this.#due(until)) this.#fire(due)
    this.#now = until
  }

  /**
   * As `advance`, but lets the work each timer starts run before the next
   * one fires (a store update, an answer on a socket): after each timer,
   * and at the end, the event loop turns `turns` times.
   */
  async pass (ms: number, turns = 5): Promise<void> {
    const until = this.#now + ms
    for (let due = this.#due(until); due !== undefined; due = this.#due(until)) {
      this.#fire(due)
      await settle(turns)
    }
    this.#now = until
    await settle(turns)
  }

  #add (fn: () => void, ms: number, every: number | null): TimerHandle {
    const timer = { id: this.#next++, at: this.#now + Math.max(0, ms), fn, every }
    this.#timers.push(timer)
    return timer.id
  }

  #due (until: number): Timer | undefined {
    let first: Timer | undefined
    for (const t of this.#timers) if (t.at <= until && (first === undefined || t.at < first.at || (t.at === first.at && t.id < first.id))) first = t
    return first
  }

  #fire (timer: Timer): void {
    this.#now = timer.at
    if (timer.every === null) this.#timers = this.#timers.filter((t) => t !== timer)
    else timer.at += timer.every
    timer.fn()
  }
}

/** Lets the event loop turn `turns` times: promise jobs, then I/O, then the next turn. */
export async function settle (turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve))
}
