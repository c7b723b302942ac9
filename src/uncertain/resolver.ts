import type { Logger } from 'pino'
import type { Receipt } from '../model/receipt.js'
import type { Store } from '../store/types.js'
import type { UncertainMetrics } from './metrics.js'
import { resolvedReceipt } from '../receipts/lifecycle.js'
import type { Outcome, ResolvedHow } from './types.js'
import type { Uncertainty } from '../model/uncertainty.js'

export interface Resolved {
  uncertainty: Uncertainty
  /** An action's receipt as settled (or as another resolution left it). */
  receipt?: Receipt
}

/**
 * Resolves one unresolved uncertainty: settles an action's receipt first,
 * then takes the entry off the run (so a later identical call is a plain new
 * call), then forgets its index entry; counted and logged (ids only).
 * Nothing is dispatched.
 */
export class UncertainResolver {
  readonly #store: Store
  readonly #logger: Logger
  readonly #metrics: UncertainMetrics
  readonly #now: () => number

  constructor (deps: { store: Store, logger: Logger, metrics: UncertainMetrics, now?: () => number }) {
    this.#store = deps.store
    this.#logger = deps.logger
    this.#metrics = deps.metrics
    this.#now = deps.now ?? Date.now
  }

  /** The run's entry for the operation while it is unresolved. */
  async find (runId: string, operationId: string): Promise<Uncertainty | undefined> {
    return (await this.#find(runId, operationId))?.entry
  }

  async #find (runId: string, operationId: string): Promise<{ entry: Uncertainty, tenant: string } | undefined> {
    const run = await this.#store.getRun(runId)
    const entry = run?.uncertain?.find((u) => u.operationId === operationId)
    return entry === undefined ? undefined : { entry, tenant: run!.tenant }
  }

  /** Undefined when the operation is not (any more) an unresolved uncertainty of the run. */
  async resolve (runId: string, operationId: string, outcome: Outcome, how: Exclude<ResolvedHow, 'idempotent_retry'>): Promise<Resolved | undefined> {
    const found = await this.#find(runId, operationId)
    if (found === undefined) return undefined
    const open = found.entry
    let receipt: Receipt | undefined
    if (open.action) {
      // The receipt before the run: once the run lets an identical call through, the journal already says what happened.
      const at = new Date(this.#now()).toISOString()
      receipt = await this.#store.reviseReceipt(operationId, (r) => resolvedReceipt(r, outcome, how, at))
    }
    const taken = await this.#store.updateRun(runId, (r) => {
      const i = r.uncertain?.findIndex((u) => u.operationId === operationId) ?? -1
      if (i < 0) return undefined
      const u = r.uncertain!.splice(i, 1)[0]
      if (r.uncertain!.length === 0) delete r.uncertain
      return u
    })
    if (!taken.found || taken.value === undefined) return undefined
    await Promise.all([this.#store.unindexUncertain(operationId), this.#store.forgetTenantUncertain(found.tenant, [operationId])])
    this.recorded(runId, taken.value, how, outcome.status)
    return receipt === undefined ? { uncertainty: taken.value } : { uncertainty: taken.value, receipt }
  }

  /** Counts and logs a resolution (the engine's idempotent retries are resolved in the batch's own update). */
  recorded (runId: string, u: Uncertainty, how: ResolvedHow, status: string): void {
    this.#metrics.resolved(how)
    this.#logger.info({ runId, batchId: u.batchId, callId: u.callId, operationId: u.operationId, tool: u.tool, how, status }, 'uncertain write resolved')
  }
}
