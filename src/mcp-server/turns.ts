/**
 * Each MCP `tools/call` is a turn of one call of its run (SPEC section 16),
 * run through the same engine as a batch: preparation, approvals, loops,
 * retry safety, receipts, telemetry.
 *
 * Scheduling, for now: a run's MCP calls run one after another, in arrival
 * order, in this process; a batch of the batch route (or of another replica)
 * that holds the run makes them wait until it is answered. This is the
 * strictest schedule SPEC section 16 allows (no overlap at all), so it is
 * safe; letting eligible calls overlap is for the coordinator's single-call
 * entry.
 */
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { Decider } from '../model/waiting.js'
import type { ApprovalService } from '../approvals/service.js'
import { waitForAnswer } from '../approvals/waiters.js'
import type { BatchEngine } from '../batch/engine.js'
import type { Clock } from '../clock.js'
import type { ToolCallResult } from '../dispatch/executor.js'
import type { CallRelay, CallRelays } from '../dispatch/relays.js'
import { ProblemError } from '../errors.js'
import type { Store } from '../store/types.js'
import { type McpToolResult, runEndedResult, toolResultOf, type TurnAnswer } from './results.js'

/** How often a waiting call reads the store for a decision taken on another replica. */
const DECISION_POLL_MS = 1000
/** While a call waits for a person, a client that gave a progress token hears from it this often. */
export const APPROVAL_PROGRESS_MS = 15_000
/** A run held by another batch is asked again after this long, doubling up to the cap. */
const BUSY_RETRY_MS = 25
const BUSY_RETRY_CAP_MS = 500

/** One `tools/call`, its tool resolved to a name the run offers. */
export interface OneCall {
  runId: string
  tenant: string
  scopes: ReadonlySet<string>
  keyName?: string | undefined
  /** The canonical tool name. */
  tool: string
  arguments: unknown
  /** Aborted by the client's `notifications/cancelled` or the session's end. */
  signal: AbortSignal
  /** Sends an MCP progress notification to the caller, when it gave a progress token. */
  progress?: ((message: string) => void) | undefined
  /** The caller as the tool's executor can reach it (an imported MCP tool's progress, logs, requests); its `result` is kept for the answer. */
  relay?: Omit<CallRelay, 'result'> | undefined
  /** Asks the client's user to decide on a held call, when the client can (elicitation). */
  askUser?: ((question: ApprovalQuestion, signal: AbortSignal) => Promise<UserDecision | null>) | undefined
}

/** What a person is asked about a held call. */
export interface ApprovalQuestion { tool: string, description: string, arguments: unknown }
/** A person's answer through the client; null: no answer (cancelled, or the client cannot ask). */
export interface UserDecision { approve: boolean, reason?: string }

export interface TurnDeps {
  engine: BatchEngine
  approvals: ApprovalService
  store: Store
  clock: Clock
  logger: Logger
  relays: CallRelays
  /** The description of a tool, for the question put to a person. */
  describe: (tool: string) => string
}

/** Runs MCP calls as one-call turns, one run's calls one at a time. */
export class OneCallTurns {
  readonly #deps: TurnDeps
  /** The last turn queued per run: the next one starts once it settles. */
  readonly #tails = new Map<string, Promise<unknown>>()

  constructor (deps: TurnDeps) {
    this.#deps = deps
  }

  /**
   * Runs the call after the run's earlier MCP calls. Answers null when the
   * client cancelled it before it started: nothing of it ran, and MCP sends
   * no answer to a cancelled request.
   */
  run (call: OneCall): Promise<McpToolResult | null> {
    const before = this.#tails.get(call.runId) ?? Promise.resolve()
    const turn = before.then(() => call.signal.aborted ? null : this.#turn(call))
    const tail = turn.catch(() => undefined)
    this.#tails.set(call.runId, tail)
    void tail.then(() => { if (this.#tails.get(call.runId) === tail) this.#tails.delete(call.runId) })
    return turn
  }

  async #turn (call: OneCall): Promise<McpToolResult | null> {
    const callId = `mcp_${randomUUID()}`
    const batchId = `mcp_${randomUUID()}`
    // What the executor sends while the call runs reaches this caller, on whichever request of this process runs it.
    let raw: ToolCallResult | undefined
    const relayed = call.relay === undefined ? null : this.#deps.relays.register(call.runId, callId, { ...call.relay, result: (r) => { raw = r } })
    try {
      return await this.#turnOf(call, callId, batchId, () => raw)
    } finally {
      relayed?.release()
    }
  }

  async #turnOf (call: OneCall, callId: string, batchId: string, raw: () => ToolCallResult | undefined): Promise<McpToolResult | null> {
    let wait = BUSY_RETRY_MS
    for (;;) {
      try {
        const answered = await this.#deps.engine.execute({
          runId: call.runId,
          tenant: call.tenant,
          scopes: call.scopes,
          ...(call.keyName === undefined ? {} : { keyName: call.keyName }),
          batchId,
          calls: [{ id: callId, name: call.tool, arguments: call.arguments ?? {} }],
          signal: call.signal
        })
        const body = answered.status === 202 ? await this.#decided(call, batchId, callId, answered.body) : answered.body
        if (body === null) return runEndedResult(callId, 'ended', undefined)
        return toolResultOf(JSON.parse(body) as TurnAnswer, raw())
      } catch (err) {
        if (!(err instanceof ProblemError)) throw err
        if (err.code === 'run_not_active') return runEndedResult(callId, 'terminated', err.extra?.terminationReason as string | undefined)
        if (err.code === 'run_not_found') return runEndedResult(callId, 'ended', undefined)
        if (err.code !== 'run_busy') throw err
        // Another batch holds the run (the batch route, or another replica): wait for it.
        if (call.signal.aborted) return null
        await this.#sleep(wait, call.signal)
        if (call.signal.aborted) return null
        wait = Math.min(wait * 2, BUSY_RETRY_CAP_MS)
      }
    }
  }

  /**
   * A held call waits for its decision, taken by whoever decides first: a
   * person in the approvals inbox, API or page, or the client's user through
   * elicitation. Answers the completed batch's JSON, or null when its run ended.
   */
  async #decided (call: OneCall, batchId: string, callId: string, heldBody: string): Promise<string | null> {
    const { approvals, store, clock } = this.#deps
    const stop = new AbortController()
    const onCancel = (): void => {
      // The client gave up on a call that has not started: it is withdrawn (cancelled, not denied), unless someone decided first.
      this.#deps.approvals.withdraw(call.tenant, call.runId, batchId, [callId]).catch((err: unknown) => {
        if (!(err instanceof ProblemError && err.code === 'run_not_found')) this.#deps.logger.warn({ runId: call.runId, batchId, err: { message: (err as Error).message } }, 'A call the MCP client cancelled could not be withdrawn')
      })
    }
    call.signal.addEventListener('abort', onCancel, { once: true })
    const ticker = call.progress === undefined
      ? null
      : clock.setInterval(() => call.progress?.('Waiting for a person to approve the call.'), APPROVAL_PROGRESS_MS)
    if (call.askUser !== undefined) {
      const held = JSON.parse(heldBody) as { approvals?: Array<{ callId: string, arguments: unknown }> }
      const question = { tool: call.tool, description: this.#deps.describe(call.tool), arguments: held.approvals?.find((a) => a.callId === callId)?.arguments ?? call.arguments }
      call.askUser(question, stop.signal).then(
        (decision) => { if (decision !== null && !stop.signal.aborted) void this.#decide(call, batchId, callId, decision) },
        (err: unknown) => { if (!stop.signal.aborted) this.#deps.logger.warn({ runId: call.runId, batchId, err: { message: (err as Error).message } }, 'MCP client could not be asked to approve a call') }
      )
    }
    try {
      return await waitForAnswer({ store, waiters: approvals.waiters, runId: call.runId, batchId, lastSeq: 0, send: () => {}, signal: stop.signal, pollMs: DECISION_POLL_MS })
    } finally {
      stop.abort()
      call.signal.removeEventListener('abort', onCancel)
      if (ticker !== null) clock.clearInterval(ticker)
    }
  }

  /** A decision on the held call; one taken first elsewhere wins, and this one is dropped. */
  async #decide (call: OneCall, batchId: string, callId: string, decision: UserDecision): Promise<void> {
    const by: Decider = { tenant: call.tenant, ...(call.keyName === undefined ? {} : { name: call.keyName }) }
    try {
      await this.#deps.approvals.decide(by, call.runId, batchId, [{ callId, approve: decision.approve, ...(decision.reason === undefined ? {} : { reason: decision.reason }) }])
    } catch (err) {
      if (err instanceof ProblemError && (err.code === 'approval_not_pending' || err.code === 'run_not_found' || err.code === 'batch_not_found')) return
      this.#deps.logger.warn({ runId: call.runId, batchId, err: { message: (err as Error).message } }, 'A decision from an MCP client could not be applied')
    }
  }

  #sleep (ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.#deps.clock.setTimeout(done, ms)
      function done (): void {
        signal.removeEventListener('abort', onAbort)
        resolve()
      }
      const clock = this.#deps.clock
      function onAbort (): void {
        clock.clearTimeout(timer)
        done()
      }
      signal.addEventListener('abort', onAbort, { once: true })
    })
  }
}
