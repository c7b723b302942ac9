import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { CreateRunInput } from '../../schemas/run.js'
import { type Clock, systemClock } from '../clock.js'
import { ProblemError } from '../errors.js'
import { StoreFullError } from '../store/memory.js'
import { TenantRunsQuotaError } from '../store/records.js'
import type { Store } from '../store/types.js'
import { resolveRunOptions } from './options.js'
import { newRunRecord } from './record.js'
import { type LoopLimits } from '../model/loops.js'
import { applyDeadline, deadlinePassed } from './deadline.js'
import { cancel, ownedRun, runNotFound } from './transitions.js'
import type { RunRecord } from '../model/run.js'
import { type RunView, runView } from './view.js'

export interface RunServiceOptions {
  store: Store
  runTtlMs: number
  maxConcurrentTools: number
  /** The server's defaults of the loop limits (from the environment). */
  loopDefaults?: LoopLimits
  /** Inside the run's atomic update: the run-level rules' slices start over after a user message, or are freed as the run ends (src/guards/ `resetGuards`); unset, none is. */
  reset?: (run: RunRecord, cause: 'message' | 'end') => void
  /** A run this service found past its timeoutMs and terminated: counted and logged. */
  onTimedOut?: (runId: string) => void
  /** A run cancelled (or found timed out) while a batch of it waited for approvals: that batch is answered, every held and waiting call `cancelled` (src/approvals). */
  onCancelledWaiting?: (runId: string) => Promise<void>
  /** Where a cancel the store could not publish is logged (the run's stored state still says it). */
  logger?: Pick<Logger, 'warn'>
  /** The clock of runs' creation, deadlines and ending. @default systemClock */
  clock?: Clock
}

/** Most bytes of a run's `metadata` as JSON (SPEC section 19): it is kept, and read, with the run. */
export const MAX_METADATA_BYTES = 16 * 1024

/** Run life cycle behind the routes: create, read, end, cancel, messages. */
export class RunService {
  readonly #options: RunServiceOptions
  readonly #clock: Clock

  constructor (opts: RunServiceOptions) {
    this.#options = opts
    this.#clock = opts.clock ?? systemClock
  }

  /** A replica running the run's batch hears it at its next lease renewal instead: logged, not thrown (the store counts the failure). */
  #publishFailed (runId: string, err: unknown): void {
    this.#options.logger?.warn({ runId, err: { message: (err as Error).message } }, 'Store failed to publish a cancel; the batch in flight stops at its next lease renewal')
  }

  /** A run this service found past its timeoutMs and terminated: counted, and its waiting batch cancelled at once. */
  async #timedOut (run: RunRecord): Promise<void> {
    this.#options.onTimedOut?.(run.runId)
    if (run.waiting?.phase === 'awaiting') await this.#options.onCancelledWaiting?.(run.runId)
  }

  view (run: RunRecord): RunView {
    return runView(run, this.#options.runTtlMs)
  }

  async create (tenant: string, input: CreateRunInput): Promise<RunView> {
    const metadataBytes = input.metadata === undefined ? 0 : Buffer.byteLength(JSON.stringify(input.metadata))
    if (metadataBytes > MAX_METADATA_BYTES) {
      throw new ProblemError('quota_exceeded', `The run's metadata is ${metadataBytes} bytes as JSON, over the quota of ${MAX_METADATA_BYTES}.`)
    }
    const run = newRunRecord(input.runId ?? `run_${randomUUID()}`, tenant, resolveRunOptions(input, this.#options.maxConcurrentTools, this.#options.loopDefaults), this.#clock.now())
    let created: boolean
    try {
      created = await this.#options.store.createRun(run)
    } catch (err) {
      if (err instanceof StoreFullError) throw new ProblemError('overloaded', 'Too many runs are busy; try again later.')
      if (err instanceof TenantRunsQuotaError) throw new ProblemError('quota_exceeded', `This tenant holds ${err.max} runs, its quota (TOOLGATE_MAX_RUNS_PER_TENANT), and none of them has ended: end one (DELETE /v1/runs/{runId}) to make room, or wait for an idle one to expire.`)
      throw err
    }
    if (!created) throw new ProblemError('run_exists', `Run ${run.runId} exists already.`)
    return this.view(run)
  }

  /**
   * The run if the tenant owns it; another tenant's run does not exist for
   * them. A run past its timeoutMs reads as terminated by it, and is stored so.
   */
  async get (tenant: string, runId: string): Promise<RunRecord> {
    const run = ownedRun(await this.#options.store.getRun(runId), tenant, runId)
    if (run.state !== 'active' || !deadlinePassed(run, this.#clock.now())) return run
    const result = await this.#options.store.updateRun(runId, (r) => ({ run: r, timedOut: applyDeadline(r, this.#clock.now()) }))
    if (!result.found) throw runNotFound(runId)
    if (result.value.timedOut) await this.#timedOut(result.value.run)
    return result.value.run
  }

  /** Ends the run; with `createdAt`, only the run of the id created then (a later run of the id is run_not_found). */
  async end (tenant: string, runId: string, createdAt?: number): Promise<RunView> {
    ownedRun(await this.get(tenant, runId), tenant, runId, createdAt)
    // Stored before it is published, as cancel does: the batch that hears it must find the run ended, never still active.
    const reset = this.#options.reset
    const run = await this.#options.store.endRun(runId, this.#clock.now(), reset === undefined ? undefined : (r) => reset(r, 'end'))
    if (run === undefined) throw runNotFound(runId)
    await this.#options.store.publishCancel(runId, 'ended').catch((err: unknown) => this.#publishFailed(runId, err))
    return this.view(run)
  }

  /** Cancels the batch in flight, if any, and sets the run to `cancelled`. A run already stopped is left as it is. */
  async cancel (tenant: string, runId: string): Promise<RunView> {
    const result = await this.#options.store.updateRun(runId, (run) => {
      ownedRun(run, tenant, runId)
      const timedOut = applyDeadline(run, this.#clock.now())
      cancel(run)
      return { run, timedOut }
    })
    if (!result.found) throw runNotFound(runId)
    if (result.value.timedOut) this.#options.onTimedOut?.(runId)
    // The state is stored: a replica that misses this message sees it at its batch's next lease renewal.
    await this.#options.store.publishCancel(runId, 'cancelled').catch((err: unknown) => this.#publishFailed(runId, err))
    if (result.value.run.waiting?.phase === 'awaiting') await this.#options.onCancelledWaiting?.(runId)
    return this.view(result.value.run)
  }

  /** A genuine user message reached the model: the exact-repeat streak and every loop streak start over. */
  async message (tenant: string, runId: string): Promise<RunView> {
    const result = await this.#options.store.updateRun(runId, (run) => {
      ownedRun(run, tenant, runId)
      const timedOut = applyDeadline(run, this.#clock.now())
      if (run.state !== 'active') return { kind: 'not_active' as const, reason: run.terminationReason, timedOut, run }
      // Each rule's slice starts over (the guards', src/guards/; a batch resumed after this message is admitted from fresh streaks too).
      this.#options.reset?.(run, 'message')
      return { kind: 'ok' as const, run, timedOut }
    })
    if (!result.found) throw runNotFound(runId)
    if (result.value.timedOut) await this.#timedOut(result.value.run)
    if (result.value.kind === 'not_active') {
      throw new ProblemError('run_not_active', `The run is not active (${result.value.reason ?? 'unknown'}).`, { terminationReason: result.value.reason })
    }
    return this.view(result.value.run)
  }
}
