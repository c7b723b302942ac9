import type { Logger } from 'pino'
import { Counter, Gauge, type Registry } from 'prom-client'
import type { Store } from '../store/types.js'
import { RESOLVED_HOWS, type ResolvedHow } from './types.js'

/** The metrics of SPEC section 14, on the app's registry. */
export class UncertainMetrics {
  readonly #resolved: Counter<'how'>

  constructor (registry: Registry, store: Store, logger: Pick<Logger, 'warn'>) {
    const registers = [registry]
    this.#resolved = new Counter({
      name: 'toolgate_uncertain_resolved_total',
      help: 'Unresolved uncertain writes resolved, by how: status_url, idempotent_retry, manual.',
      labelNames: ['how'],
      registers
    })
    for (const how of RESOLVED_HOWS) this.#resolved.inc({ how }, 0)
    // Logged once per outage, not once per scrape.
    let failing = false
    new Gauge({
      name: 'toolgate_uncertain_unresolved',
      help: 'Uncertain writes of the runs held that nothing has resolved yet (later identical writes are blocked).',
      registers,
      async collect () {
        // A store that cannot answer keeps the last value rather than failing the scrape.
        try {
          this.set(await store.countUncertain())
          failing = false
        } catch (err) {
          // The store's own health shows on /readyz, and the failure in toolgate_store_errors_total.
          if (!failing) logger.warn({ err: { message: (err as Error).message } }, 'Store failed to count unresolved uncertain writes; the gauge keeps its last value')
          failing = true
        }
      }
    })
  }

  resolved (how: ResolvedHow): void {
    this.#resolved.inc({ how })
  }
}
