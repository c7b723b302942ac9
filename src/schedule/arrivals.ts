/**
 * Calls of one run that arrive one at a time (each MCP `tools/call` is a
 * batch of one call) and may be in flight together, scheduled by arrival as
 * the epoch runner schedules a batch's calls by source order:
 *
 * - a call eligible to overlap runs beside the run's running calls, up to
 *   the run's `maxConcurrentTools`, once every earlier call is known to let
 *   it (prepared, not a barrier, not of its conflict key);
 * - a barrier waits until every earlier call has settled and runs alone; a
 *   call that arrives after a waiting barrier waits for it;
 * - calls of one conflict key never overlap, and start in arrival order;
 * - a write that becomes uncertain blocks the writes that arrived before it
 *   settled and have not started (of its conflict key, when it has one);
 *   they go on at once, to be answered `blocked` without being sent.
 *
 * Plain in-process bookkeeping: no store, no timers. One per run that has
 * calls in flight in this process (src/mcp-server/turns.ts).
 */

/** How a call stands in its run's schedule, known once it is prepared. */
export interface ArrivalClass {
  /** Eligible to overlap other calls (see `isEligibleToOverlap`); false: a barrier. */
  overlap: boolean
  /** Runs alone under a lease of its own, outside the calls that share one (a call a guard may hold for approval). */
  alone: boolean
  /** A read: never blocked behind an uncertain write. */
  readOnly: boolean
  conflictKey: string | null
  /** The run's `maxConcurrentTools`. */
  maxConcurrent: number
}

/** What a call's turn is: go, go to be answered `blocked` behind an uncertain write (its call id), or nothing (cancelled while it waited). */
export type Turn =
  | { readonly kind: 'go', readonly alone: boolean }
  | { readonly kind: 'blocked', readonly by: string }
  | { readonly kind: 'cancelled' }

/** A write that became uncertain, as its settlement reports it. */
export interface UncertainWrite { callId: string, conflictKey: string | null }

interface Blocker { by: string, conflictKey: string | null }

/** One call in the schedule, from its arrival until it settled or left. */
export class Arrival {
  readonly #schedule: ArrivalSchedule
  /** Set once prepared. */
  cls: ArrivalClass | null = null
  state: 'waiting' | 'running' | 'done' = 'waiting'
  /** The uncertain writes that settled while it waited, before it was known whether it is a write they block. */
  blockers: Blocker[] | null = null
  blockedBy: string | null = null
  #resolve: ((turn: Turn) => void) | null = null

  constructor (schedule: ArrivalSchedule) {
    this.#schedule = schedule
  }

  /** Its class, once the call is prepared: the schedule may let it (and calls behind it) go. */
  describe (cls: ArrivalClass): void {
    if (this.state !== 'waiting' || this.cls !== null) return
    this.cls = cls
    if (this.blockers !== null && !cls.readOnly) {
      const blocker = this.blockers.find((b) => b.conflictKey === null || b.conflictKey === cls.conflictKey)
      if (blocker !== undefined) this.blockedBy = blocker.by
    }
    this.blockers = null
    this.#schedule.pump()
  }

  /** Waits for its turn; `signal` aborted while it waits: cancelled, and it leaves the schedule. */
  start (signal?: AbortSignal): Promise<Turn> {
    if (this.state === 'done' || signal?.aborted === true) {
      this.leave()
      return Promise.resolve(CANCELLED)
    }
    const turn = new Promise<Turn>((resolve) => { this.#resolve = resolve })
    this.#schedule.pump()
    // Its turn came at once (the common case: nothing ahead of it): there is no wait to cancel.
    if (signal === undefined || this.#resolve === null) return turn
    const onAbort = (): void => {
      if (this.state !== 'waiting') return
      this.#resolve?.(CANCELLED)
      this.#resolve = null
      this.leave()
    }
    signal.addEventListener('abort', onAbort, { once: true })
    void turn.then(() => signal.removeEventListener('abort', onAbort))
    return turn
  }

  /** Starts it, if it waits for its turn. */
  go (): void {
    const resolve = this.#resolve
    if (this.state !== 'waiting' || resolve === null) return
    this.state = 'running'
    this.#resolve = null
    resolve(this.blockedBy === null ? { kind: 'go', alone: this.cls?.alone === true } : { kind: 'blocked', by: this.blockedBy })
  }

  /** Whether it waits with a resolver (`start` was called). */
  get asked (): boolean {
    return this.#resolve !== null
  }

  /** It settled: an uncertain write blocks the writes still waiting; the calls behind it may go. */
  settled (uncertain: UncertainWrite | null): void {
    if (this.state === 'done') return
    if (uncertain !== null) this.#schedule.blockWaiting(uncertain, this)
    this.leave()
  }

  /** It left the schedule (settled, failed, refused before its turn, cancelled); idempotent. */
  leave (): void {
    if (this.state === 'done') return
    this.#schedule.remove(this)
    this.state = 'done'
    this.#resolve?.(CANCELLED)
    this.#resolve = null
    this.#schedule.pump()
  }
}

const CANCELLED: Turn = Object.freeze({ kind: 'cancelled' })

/** The calls of one run in flight in this process, in arrival order. */
export class ArrivalSchedule {
  /** Not yet done, in arrival order. */
  readonly #entries: Arrival[] = []
  #pumping = false

  /** A call arrived: its place in the order is now. */
  arrive (): Arrival {
    const a = new Arrival(this)
    this.#entries.push(a)
    return a
  }

  /** No call in flight. */
  get idle (): boolean {
    return this.#entries.length === 0
  }

  /**
   * Calls in flight that run, or may run, under a lease the run's calls
   * share: waiting or running, not known yet or known not to run alone.
   */
  get sharing (): number {
    let n = 0
    for (const e of this.#entries) if (e.cls?.alone !== true) n++
    return n
  }

  /** Calls running now. */
  get running (): number {
    let n = 0
    for (const e of this.#entries) if (e.state === 'running') n++
    return n
  }

  /** @internal */
  remove (a: Arrival): void {
    const i = this.#entries.indexOf(a)
    if (i >= 0) this.#entries.splice(i, 1)
  }

  /** @internal An uncertain write settled: the writes waiting (arrived before now, not started) that it blocks are blocked. */
  blockWaiting (u: UncertainWrite, from: Arrival): void {
    for (const e of this.#entries) {
      if (e === from || e.state !== 'waiting' || e.blockedBy !== null) continue
      if (e.cls === null) (e.blockers ??= []).push({ by: u.callId, conflictKey: u.conflictKey })
      else if (!e.cls.readOnly && (u.conflictKey === null || u.conflictKey === e.cls.conflictKey)) e.blockedBy = u.callId
    }
  }

  /** @internal Starts, in arrival order, every waiting call whose turn it is. */
  pump (): void {
    // A call started here may settle synchronously and pump again: the outer loop sees it.
    if (this.#pumping) return
    this.#pumping = true
    try {
      let running = this.running
      for (let i = 0; i < this.#entries.length; i++) {
        const e = this.#entries[i]!
        if (e.state !== 'waiting' || !e.asked || !this.#mayStart(e, i, running)) continue
        e.go()
        running++
      }
    } finally {
      this.#pumping = false
    }
  }

  #mayStart (e: Arrival, index: number, running: number): boolean {
    const cls = e.cls
    if (cls === null) return false
    const barrier = !cls.overlap || cls.alone
    if (barrier) return index === 0 && running === 0
    if (e.blockedBy === null && running >= cls.maxConcurrent) return false
    for (let i = 0; i < index; i++) {
      const p = this.#entries[i]!
      if (p.cls === null || !p.cls.overlap || p.cls.alone) return false
      // A blocked call is not sent: it keeps no key from others, nor waits for one.
      if (e.blockedBy === null && p.blockedBy === null && cls.conflictKey !== null && p.cls.conflictKey === cls.conflictKey) return false
    }
    return true
  }
}
