import { Counter, type Registry } from 'prom-client'
import type { Logger } from 'pino'
import type { BatchEngine, TakenUp } from '../batch/engine.js'
import type { BatchEvent } from '../model/result.js'
import { type Clock, type TimerHandle, systemClock } from '../clock.js'
import { ProblemError } from '../errors.js'
import type { ExternalAuthorizer } from '../prepare/authorize.js'
import { prepareBatch } from '../prepare/pipeline.js'
import { deadlinePassed } from '../runs/deadline.js'
import { ownedRun } from '../runs/transitions.js'
import type { RunRecord } from '../model/run.js'
import type { Store } from '../store/types.js'
import type { ToolLookup } from '../model/tool.js'
import { type ApprovalContext, batchCalls } from './context.js'
import { type Decider, type StoredOutcome, type WaitingBatch, storedOutcome } from '../model/waiting.js'
import type { DecisionInput, PendingApproval } from './types.js'
import { BatchWaiters } from './waiters.js'
import { applyDecisions, expirePending, pendingApprovals, pendingIndex, withdrawPending } from './waiting.js'

export interface ApprovalServiceOptions {
  store: Store
  engine: BatchEngine
  tools: ToolLookup
  authorizer?: ExternalAuthorizer | undefined
  registry: Registry
  logger: Pick<Logger, 'info' | 'warn'>
  maxArgumentBytes: number
  /** The clock of requests, decisions, expiry and the sweep. @default systemClock */
  clock?: Clock
  /** How often this replica looks for expired approvals; 0 only when `sweep` is called. */
  sweepIntervalMs: number
}

/** One call waiting for a decision, in the inbox of every run of a tenant; `context` for the person deciding (src/approvals/context.ts). */
export interface InboxEntry extends PendingApproval { runId: string, batchId: string, context?: ApprovalContext }

/** What the decisions route answers: 202 with what remains, or 200 with the batch's completed answer. */
export interface DecisionAnswer { status: 200 | 202, body: string }

/**
 * Approvals behind the routes (SPEC section 13): the inbox, decisions, and
 * the expiry sweep every replica runs. Whichever request (or sweep) decides
 * a batch's last call runs the batch, on this replica, and answers it.
 */
export class ApprovalService {
  readonly waiters: BatchWaiters
  readonly #options: ApprovalServiceOptions
  readonly #clock: Clock
  readonly #decisions: Counter<'tool' | 'decision'>
  #timer: TimerHandle | null = null
  #sweeping: Promise<number> | null = null
  #sweepFailed = false

  constructor (opts: ApprovalServiceOptions) {
    this.#options = opts
    this.waiters = new BatchWaiters(opts.logger)
    this.#clock = opts.clock ?? systemClock
    this.#decisions = new Counter({
      name: 'toolgate_approvals_total',
      help: 'Decisions on calls held for approval, by tool and decision (approved, denied, expired).',
      labelNames: ['tool', 'decision'],
      registers: [opts.registry]
    })
    if (opts.sweepIntervalMs > 0) {
      this.#timer = this.#clock.setInterval(() => { void this.sweep() }, opts.sweepIntervalMs)
    }
  }

  close (): void {
    if (this.#timer !== null) this.#clock.clearInterval(this.#timer)
    this.#timer = null
  }

  /** Every call of the tenant's runs waiting for a decision, oldest request first. */
  async inbox (tenant: string): Promise<InboxEntry[]> {
    const out: InboxEntry[] = []
    const now = this.#clock.now()
    for (const run of await this.#options.store.waitingRuns()) {
      const w = run.waiting
      // A run past its timeoutMs is over, though no sweep has settled its batch yet.
      if (run.tenant !== tenant || w == null || w.phase !== 'awaiting' || deadlinePassed(run, now)) continue
      const calls = batchCalls(w)
      for (const p of pendingApprovals(w, run.uncertain)) {
        out.push({ runId: run.runId, batchId: w.state.batchId, ...p, context: { batch: calls.filter((c) => c.callId !== p.callId) } })
      }
    }
    return out.sort((a, b) => a.requestedAt.localeCompare(b.requestedAt))
  }

  /**
   * Applies decisions on a waiting batch, all or none. Edited arguments go
   * through the whole preparation pipeline again, as the batch's own key
   * would have them prepared. When none is left pending the batch runs here.
   */
  async decide (by: Decider, runId: string, batchId: string, decisions: readonly DecisionInput[]): Promise<DecisionAnswer> {
    const run = await this.#run(by.tenant, runId)
    const w = run.waiting
    if (w?.state.batchId === batchId && w.phase === 'awaiting' && timedOut(run, w, this.#clock.now())) {
      // The run's timeoutMs passed while the batch waited: it is cancelled, never decided.
      await this.#takeUpStale(runId, batchId)
      throw new ProblemError('approval_not_pending', `Batch ${batchId} is not waiting for decisions: its run timed out.`)
    }
    if (w?.state.batchId !== batchId || w.phase !== 'awaiting') {
      const known = run.inFlight?.batchId === batchId || w?.state.batchId === batchId || (await this.#options.store.getBatch(runId, batchId)) !== undefined
      if (!known) throw new ProblemError('batch_not_found', `No batch ${batchId} in run ${runId}.`)
      throw new ProblemError('approval_not_pending', `Batch ${batchId} is not waiting for decisions.`)
    }
    const edits = await this.#prepareEdits(run, w, decisions)
    const now = this.#clock.now()
    const taken = await this.#options.engine.takeUpWaiting(runId, batchId, (_r, waiting) => applyDecisions(waiting, decisions, edits, by, now))
    if (taken === undefined) throw new ProblemError('approval_not_pending', `Batch ${batchId} is not waiting for decisions.`)
    this.#announce(runId, batchId, taken.value, taken.waiting)
    if (!taken.start) return { status: 202, body: this.#options.engine.answerWaiting(taken.run, taken.waiting) }
    return { status: 200, body: await this.#runTaken(runId, batchId, taken) }
  }

  /**
   * Withdraws held calls no one has decided yet, because their caller gave
   * up on them (an MCP client's `notifications/cancelled`): they end
   * `cancelled`, and when none is left pending the batch runs here. Answers
   * false when none of them was pending (decided first, or gone).
   */
  async withdraw (tenant: string, runId: string, batchId: string, callIds: readonly string[]): Promise<boolean> {
    await this.#run(tenant, runId)
    const ids = new Set(callIds)
    const taken = await this.#options.engine.takeUpWaiting(runId, batchId, (_r, w) => withdrawPending(w, ids, this.#clock.now()))
    if (taken === undefined) return false
    if (taken.value > 0) this.#options.logger.info({ runId, batchId, calls: taken.value }, 'held calls withdrawn by their caller')
    if (taken.start) await this.#runTaken(runId, batchId, taken)
    return taken.value > 0
  }

  /**
   * Takes up every waiting batch whose approvals expired (their pending
   * calls denied with `approval_expired`) or whose run is no longer active
   * or passed its timeoutMs (its calls cancelled), and runs it. Every replica sweeps; a batch is
   * taken up by one. Answers how many this call ran.
   */
  sweep (): Promise<number> {
    this.#sweeping ??= this.#sweep().finally(() => { this.#sweeping = null })
    return this.#sweeping
  }

  /** A waiting batch of a run just cancelled or timed out: every held and waiting call is `cancelled`, and the answer stored. */
  async settleCancelled (runId: string): Promise<void> {
    const run = await this.#options.store.getRun(runId)
    const w = run?.waiting
    if (run === undefined || w == null || w.phase !== 'awaiting' || (run.state === 'active' && !deadlinePassed(run, this.#clock.now()))) return
    await this.#takeUpStale(runId, w.state.batchId)
  }

  async #sweep (): Promise<number> {
    let ran = 0
    try {
      const now = this.#clock.now()
      for (const run of await this.#options.store.waitingRuns()) {
        const w = run.waiting
        if (w == null || w.phase !== 'awaiting' || (w.expiresAt > now && run.state === 'active' && !deadlinePassed(run, now))) continue
        if (await this.#takeUpStale(run.runId, w.state.batchId)) ran++
      }
      this.#sweepFailed = false
    } catch (err) {
      // Said once per outage, not once a second; the next sweep tries again.
      if (!this.#sweepFailed) this.#options.logger.warn({ err: { message: (err as Error).message } }, 'approval expiry sweep failed; retrying')
      this.#sweepFailed = true
    }
    return ran
  }

  async #takeUpStale (runId: string, batchId: string): Promise<boolean> {
    const now = this.#clock.now()
    // A run that timed out before its approvals expired cancels them (the take-up applies its deadline), not expires them.
    const taken = await this.#options.engine.takeUpWaiting(runId, batchId, (r, w) => timedOut(r, w, now) ? [] : expirePending(w, now))
    if (taken === undefined) return false
    this.#announce(runId, batchId, taken.value, taken.waiting)
    if (!taken.start) return false
    await this.#runTaken(runId, batchId, taken)
    return true
  }

  async #runTaken (runId: string, batchId: string, taken: TakenUp<unknown>): Promise<string> {
    const answer = await this.#options.engine.runTaken(taken, (e) => this.waiters.publish(runId, batchId, e))
    this.waiters.complete(runId, batchId, answer.body)
    return answer.body
  }

  /** The events, counts and log lines of decisions just stored. */
  #announce (runId: string, batchId: string, events: readonly BatchEvent[], w: WaitingBatch): void {
    for (const e of events) {
      this.waiters.publish(runId, batchId, e)
      const decision = e.type === 'call.approved' ? 'approved' : e.reason === 'approval_expired' ? 'expired' : 'denied'
      const tool = e.tool ?? ''
      this.#decisions.inc({ tool, decision })
      const i = w.state.calls.findIndex((c) => c.id === e.callId)
      const edited = w.state.approvals.held[i]?.decision?.edited === true
      // Ids and the decision only: never arguments, reasons or who decided.
      this.#options.logger.info({ runId, batchId, callId: e.callId, tool, decision, ...(edited ? { edited } : {}) }, 'approval decided')
    }
  }

  /** What preparation makes of each approval's edited arguments, by call id. */
  async #prepareEdits (run: RunRecord, w: WaitingBatch, decisions: readonly DecisionInput[]): Promise<Map<string, StoredOutcome>> {
    const edits = new Map<string, StoredOutcome>()
    // Checked again when the decisions are stored; here so a refused request prepares nothing.
    const index = pendingIndex(w.state, decisions)
    const edited = decisions.filter((d) => d.approve && d.arguments !== undefined)
    if (edited.length === 0) return edits
    const outcomes = await prepareBatch(edited.map((d) => ({ id: d.callId, name: w.state.calls[index.get(d.callId)!]!.name, arguments: d.arguments })), this.#options.tools, {
      runId: run.runId,
      tenant: run.tenant,
      allowedTools: run.options.tools === null ? null : new Set(run.options.tools),
      scopes: new Set(w.state.scopes),
      maxArgumentBytes: this.#options.maxArgumentBytes
    }, this.#options.authorizer)
    for (const o of outcomes) edits.set(o.id, storedOutcome(o))
    return edits
  }

  async #run (tenant: string, runId: string): Promise<RunRecord> {
    return ownedRun(await this.#options.store.getRun(runId), tenant, runId)
  }
}

/** Whether the run's timeoutMs passed (or ended it) while the batch waited, no later than its approvals' expiry. */
function timedOut (run: RunRecord, w: WaitingBatch, now: number): boolean {
  const { timeoutMs } = run.options.limits
  const ended = run.state === 'active' ? deadlinePassed(run, now) : run.terminationReason === 'timeout'
  return ended && timeoutMs !== null && run.createdAt + timeoutMs <= w.expiresAt
}
