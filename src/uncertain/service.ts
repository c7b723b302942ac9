/**
 * Retry safety across turns (SPEC section 14) as the rest of the service
 * uses it: resolving an uncertainty (`UncertainResolver`: by a status URL's
 * answer, by hand, by an idempotent retry) and the service that indexes a
 * batch's uncertain writes, follows them up and starts their recovery
 * (`UncertainWrites`).
 */
import type { Logger } from 'pino'
import type { Registry } from 'prom-client'
import type { Receipt } from '../model/receipt.js'
import type { Store, TenantUncertainty } from '../store/types.js'
import type { ToolLookup } from '../model/tool.js'
import { resolvedReceipt } from '../receipts/lifecycle.js'
import type { AppliedChange, UncertainChange } from './batch.js'
import { UncertainMetrics } from './metrics.js'
import { type Clock, systemClock } from '../clock.js'
import { type AttemptOutcome, Recovery, type RecoveryTarget, type Resolving, StatusClient } from './recovery.js'
import type { Outcome, Resolved, ResolvedHow } from './types.js'
import type { Uncertainty } from '../model/uncertainty.js'
import { type Incarnation, incarnationKey } from '../model/incarnation.js'

/**
 * Resolves one unresolved uncertainty: settles an action's receipt first,
 * then takes the entry off the run (so a later identical call is a plain new
 * call), then forgets its index entry; counted and logged (ids only).
 * Nothing is dispatched.
 */
export class UncertainResolver implements Resolving {
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

export interface UncertainWritesOptions {
  store: Store
  tools: ToolLookup
  logger: Logger
  registry: Registry
  /** This replica, as a recovery lock owner. */
  replicaId: string
  recoveryWindowMs: number
  recoveryConcurrency: number
  /** @default systemClock */
  clock?: Clock
  onRecoveryAttempt?: (target: RecoveryTarget, outcome: AttemptOutcome) => void
}

/** An uncertainty of a run as its tenant's list holds it. */
/** An uncertainty of a run as its tenant's list keeps it, with the run's incarnation when it is known. */
export function tenantEntry (run: { runId: string, incarnation?: Incarnation | undefined }, u: Uncertainty, tenantScoped = u.tenantKey === true): TenantUncertainty {
  return {
    operationId: u.operationId,
    runId: run.runId,
    callId: u.callId,
    tool: u.tool,
    conflictKey: u.conflictKey,
    tenantScoped,
    cause: u.cause ?? 'unknown',
    since: u.since,
    ...(run.incarnation === undefined ? {} : { incarnation: incarnationKey(run.incarnation) })
  }
}

/** A status question waits at most this long, whatever the tool's own timeout. */
const MAX_STATUS_TIMEOUT_MS = 10_000

/**
 * Retry safety across turns (SPEC section 14), as the rest of the service
 * uses it: the batch engine reports what each batch added and resolved,
 * recovery asks status URLs in the background, and the routes resolve by
 * hand. One per app instance.
 */
export class UncertainWrites {
  readonly resolver: UncertainResolver
  readonly recovery: Recovery
  readonly #opts: UncertainWritesOptions
  readonly #status = new StatusClient()

  constructor (opts: UncertainWritesOptions) {
    this.#opts = opts
    const metrics = new UncertainMetrics(opts.registry, opts.store, opts.logger)
    const clock = opts.clock ?? systemClock
    this.resolver = new UncertainResolver({ store: opts.store, logger: opts.logger, metrics, now: () => clock.now() })
    this.recovery = new Recovery({
      store: opts.store,
      resolver: this.resolver,
      status: this.#status,
      logger: opts.logger,
      owner: opts.replicaId,
      windowMs: opts.recoveryWindowMs,
      concurrency: opts.recoveryConcurrency,
      clock,
      ...(opts.onRecoveryAttempt === undefined ? {} : { onAttempt: opts.onRecoveryAttempt })
    })
  }

  /**
   * Before the batch's final update records them: notes the run of each new
   * uncertainty, so that if this replica dies in between, an index entry
   * without its uncertainty is all that is left (harmless), never the reverse.
   */
  async noteAdded (runId: string, change: UncertainChange, tenant?: string, createdAt?: number): Promise<void> {
    if (change.added.length === 0) return
    const store = this.#opts.store
    const index = store.indexUncertain(runId, change.added.map((u) => u.operationId))
    if (tenant === undefined) return await index
    // The tenant's list too (GET /v1/uncertain; a tenant-scoped key blocks every run's writes with it).
    const run = { runId, incarnation: createdAt === undefined ? undefined : { tenant, createdAt } }
    await Promise.all([index, store.noteTenantUncertain(tenant, change.added.map((u) => tenantEntry(run, u)))])
  }

  /**
   * After the batch's answer is stored; never delays or fails it: counts and
   * logs the retries that resolved, forgets what is gone, keeps the rest
   * findable, and starts recovering what a status URL can tell.
   */
  afterBatch (runId: string, change: UncertainChange, applied: AppliedChange, blockedBy: readonly Uncertainty[], tenant?: string): void {
    const { store, logger } = this.#opts
    const { dropped, list: open } = applied
    const failed = (err: unknown): void => { logger.warn({ runId, err: { message: (err as Error).message } }, 'uncertain writes: the store could not be updated') }
    // Only what this batch took off the run: a retry racing another resolution is counted once, by the first.
    for (const u of applied.resolved) {
      this.resolver.recorded(runId, u, 'idempotent_retry', 'answered')
      store.unindexUncertain(u.operationId).catch(failed)
    }
    for (const u of dropped) {
      logger.warn({ runId, operationId: u.operationId, callId: u.callId, tool: u.tool }, 'too many unresolved uncertain writes in one run: the oldest is no longer kept')
      store.unindexUncertain(u.operationId).catch(failed)
    }
    const gone = [...applied.resolved, ...dropped]
    if (tenant !== undefined && gone.length > 0) store.forgetTenantUncertain(tenant, gone.map((u) => u.operationId)).catch(failed)
    // A run still in use keeps its entries findable however long it lives.
    const added = new Set(change.added.map((u) => u.operationId))
    const older = open.filter((u) => !added.has(u.operationId)).map((u) => u.operationId)
    if (older.length > 0) store.indexUncertain(runId, older).catch(failed)
    for (const u of change.added) logger.info({ runId, batchId: u.batchId, callId: u.callId, operationId: u.operationId, tool: u.tool }, 'uncertain write kept unresolved: identical writes are blocked until it is resolved')
    // A blocked retry is a reason to ask again, on whichever replica sees it.
    for (const u of [...change.added, ...blockedBy]) this.recover(runId, u)
  }

  /** Starts recovering an uncertainty whose tool has a status URL. */
  recover (runId: string, u: Uncertainty): void {
    const target = this.targetOf(runId, u)
    if (target !== undefined) this.recovery.start(target)
  }

  /** What recovery asks for an uncertainty: undefined when its tool (as registered now) has no status URL. */
  targetOf (runId: string, u: Uncertainty): RecoveryTarget | undefined {
    const tool = this.#opts.tools.resolve(u.tool)
    const statusUrl = tool?.executor.statusUrl ?? null
    if (tool === undefined || statusUrl === null) return undefined
    return { runId, operationId: u.operationId, statusUrl, timeoutMs: Math.min(tool.executor.timeoutMs, MAX_STATUS_TIMEOUT_MS) }
  }

  async close (): Promise<void> {
    this.recovery.close()
    await this.#status.close()
  }
}
