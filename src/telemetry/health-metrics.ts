import { Counter, Gauge, type Registry } from 'prom-client'
import type { Store } from '../store/types.js'

export type Readiness = 'ready' | 'draining' | 'store_unavailable'

/** Whether the service takes work, as /readyz answers it: not draining, and its store answers. */
export async function readiness (services: { readonly draining: boolean, readonly store: Pick<Store, 'ready'> }): Promise<Readiness> {
  if (services.draining) return 'draining'
  if (!(await services.store.ready().catch(() => false))) return 'store_unavailable'
  return 'ready'
}

/** `toolgate_ready`: what /readyz would answer, at each scrape, so an alert can see readiness lost without probing. */
export function registerReadinessGauge (registry: Registry, check: () => Promise<Readiness>): void {
  new Gauge({
    name: 'toolgate_ready',
    help: 'Whether the service takes work (1) or not (0: draining, or its store does not answer), as /readyz answers.',
    registers: [registry],
    async collect () {
      this.set(await check().then((r) => (r === 'ready' ? 1 : 0), () => 0))
    }
  })
}

/** `toolgate_shed_requests_total`: requests refused because the event loop lagged past TOOLGATE_MAX_EVENT_LOOP_DELAY_MS. */
export function shedRequestsCounter (registry: Registry): Counter {
  return new Counter({ name: 'toolgate_shed_requests_total', help: 'Requests refused with 503 overloaded because the event loop lagged (load shedding).', registers: [registry] })
}
