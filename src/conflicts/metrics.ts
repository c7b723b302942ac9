import { Counter, Histogram, type Registry } from 'prom-client'

/** The metrics of SPEC section 17's tenant-scoped conflict keys, on the app's registry. */
export class ConflictMetrics {
  readonly #waits: Histogram
  readonly #blocked: Counter<'tool'>

  constructor (registry: Registry) {
    const registers = [registry]
    this.#waits = new Histogram({
      name: 'toolgate_conflict_waits_seconds',
      help: "Time a call with a tenant-scoped conflict key waited for the key (taken, or given up on), the store's round trips included.",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60],
      registers
    })
    this.#blocked = new Counter({
      name: 'toolgate_conflict_blocked_total',
      help: 'Calls not sent because of their tenant-scoped conflict key: held elsewhere for the whole wait (conflict_key_busy), or blocked by an unresolved uncertain write with the key.',
      labelNames: ['tool'],
      registers
    })
  }

  waited (seconds: number): void {
    this.#waits.observe(seconds)
  }

  blocked (tool: string): void {
    this.#blocked.inc({ tool })
  }
}
