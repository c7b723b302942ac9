/**
 * Each MCP `tools/call` is a turn of one call of its run (SPEC section 16),
 * run through the same engine as a batch: preparation, approvals, loops,
 * retry safety, receipts, telemetry.
 *
 * A run's calls arrive concurrently (clients send a model turn's calls at
 * once), so they are scheduled together, by arrival (src/schedule/
 * arrivals.ts): each is prepared first, then waits for its turn among the
 * run's calls in flight in this process; calls that may overlap run side by
 * side, each a batch of its own under one lease of the run they share
 * (`SharedLease`), taken by the first and released with the last answer. A
 * call a person may have to approve runs alone, under a lease of its own,
 * as a batch does. A batch of the batch route (or the calls of another
 * replica) that holds the run makes them wait until it is answered. A call
 * its client cancels while it waits is a turn of the run all the same,
 * recorded `cancelled` without the run's lease (src/batch/cancelled.ts).
 */
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { Decider } from '../model/waiting.js'
import type { ApprovalService } from '../approvals/service.js'
import { waitForAnswer } from '../approvals/waiters.js'
import type { BatchEngine } from '../batch/engine.js'
import type { BatchRequest, PreparedFirst } from '../batch/engine-types.js'
import type { RunOptions } from '../model/run.js'
import { SharedLease } from '../runs/lease.js'
import { type Arrival, type ArrivalClass, ArrivalSchedule, type UncertainWrite } from '../schedule/arrivals.js'
import { isEligibleToOverlap } from '../schedule/plan.js'
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
  /** The creation time of the session's run: a later run of the id is not its run. */
  createdAt: number
  tenant: string
  scopes: ReadonlySet<string>
  keyName?: string | undefined
  /** The canonical tool name. */
  tool: string
  /** The run's options, as the session read them for this call: its schedule and tool list. */
  options: Pick<RunOptions, 'toolExecution' | 'maxConcurrentTools' | 'tools'>
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

/** A run's calls in flight in this process: their schedule, and the lease they share. */
interface RunCalls {
  schedule: ArrivalSchedule
  lease: SharedLease | null
}

/** Runs MCP calls as one-call turns, a run's calls scheduled together by arrival. */
export class OneCallTurns {
  readonly #deps: TurnDeps
  /** By run id: the runs with calls in flight here. */
  readonly #runs = new Map<string, RunCalls>()

  constructor (deps: TurnDeps) {
    this.#deps = deps
  }

  /** A call of the run arrived: its place in the run's order, taken now (before anything is awaited), given to `run`. */
  arrive (runId: string): Arrival {
    let calls = this.#runs.get(runId)
    if (calls === undefined) this.#runs.set(runId, calls = { schedule: new ArrivalSchedule(), lease: null })
    return calls.schedule.arrive()
  }

  /** A call that arrived and will not run (no such tool, the run is gone): it leaves the order. */
  withdraw (runId: string, arrival: Arrival): void {
    arrival.leave()
    this.#tidy(runId)
  }

  /**
   * Runs the call when its turn comes. Answers null when the client
   * cancelled it before it started (notifications/cancelled, or its
   * session's end): nothing of it ran, MCP sends no answer to a cancelled
   * request, and it is recorded as a turn of its run whose call is
   * `cancelled`, once it has left the run's schedule.
   */
  async run (call: OneCall, arrival: Arrival): Promise<McpToolResult | null> {
    const callId = `mcp_${randomUUID()}`
    const req: BatchRequest = {
      runId: call.runId,
      createdAt: call.createdAt,
      tenant: call.tenant,
      scopes: call.scopes,
      ...(call.keyName === undefined ? {} : { keyName: call.keyName }),
      batchId: `mcp_${randomUUID()}`,
      calls: [{ id: callId, name: call.tool, arguments: call.arguments ?? {} }],
      signal: call.signal
    }
    const taken = await this.#take(call, arrival, req)
    if (taken.kind === 'result') return taken.result
    await this.#recordCancelled(call, req, taken.first)
    return null
  }

  /** The call through the run's schedule and the engine: its result, or cancelled before it started. */
  async #take (call: OneCall, arrival: Arrival, req: BatchRequest): Promise<Taken> {
    // What the executor sends while the call runs reaches this caller, on whichever request of this process runs it.
    let raw: ToolCallResult | undefined
    const relayed = call.relay === undefined ? null : this.#deps.relays.register(call.runId, req.calls[0]!.id, { ...call.relay, result: (r) => { raw = r } })
    let uncertain: UncertainWrite | null = null
    try {
      const first = await this.#deps.engine.prepareFirst(req, call.options.tools)
      arrival.describe(classOf(first, call.options))
      const turn = await arrival.start(call.signal)
      if (turn.kind === 'cancelled') return { kind: 'cancelled', first }
      // A blocked call's guards are opened anew, knowing it is blocked (it is prepared again: a rare path).
      if (turn.kind === 'blocked') req.blockedBy = turn.by
      else if (first !== undefined) req.preparedFirst = first
      const answer = turn.kind === 'go' && turn.alone ? await this.#alone(call, req) : await this.#shared(call, req)
      if (answer.kind === 'cancelled') return { kind: 'cancelled', first }
      if (answer.kind === 'ended') return { kind: 'result', result: answer.result }
      uncertain = uncertainOf(answer.body)
      return { kind: 'result', result: toolResultOf(answer.body, raw) }
    } finally {
      arrival.settled(uncertain)
      relayed?.release()
      this.#afterCall(call.runId)
    }
  }

  /**
   * A call cancelled before the engine had it: a turn of its run whose call
   * is `cancelled`, recorded without the run's lease (src/batch/cancelled.ts),
   * so the run's other calls and batches go on as they were. Its client
   * gets nothing either way: a record the store could not write is logged.
   */
  async #recordCancelled (call: OneCall, req: BatchRequest, first: PreparedFirst | undefined): Promise<void> {
    try {
      await this.#deps.engine.recordCancelled(req, first)
    } catch (err) {
      this.#deps.logger.warn({ runId: call.runId, batchId: req.batchId, err: { message: (err as Error).message } }, 'A call the MCP client cancelled before it started could not be recorded')
    }
  }

  /** A call under the lease its run's calls share here (taken by the first, released with the last answer). */
  #shared (call: OneCall, req: BatchRequest): Promise<Answered> {
    return this.#untilFree(call, req, async () => {
      const lease = await this.#lease(call.runId)
      // Cancelled while the run's last lease was being released: it never starts.
      if (call.signal.aborted) return CANCELLED
      lease.enter()
      try {
        const answered = await this.#deps.engine.execute({ ...req, shared: lease })
        return { kind: 'answer', body: JSON.parse(answered.body) as TurnAnswer }
      } catch (err) {
        // Refused busy with the run's lease held under this one: it lapsed under its calls, and is lost to them.
        if (lease.taken && err instanceof ProblemError && err.code === 'run_busy') lease.abort('lease_lost')
        throw err
      } finally {
        lease.exit()
        if (lease.closing !== null) this.#deps.engine.forgetShared(lease)
      }
    })
  }

  /** A call that runs alone under a lease of its own (a person may have to approve it), once the shared lease is released. */
  async #alone (call: OneCall, req: BatchRequest): Promise<Answered> {
    const lease = this.#runs.get(call.runId)?.lease
    if (lease != null) {
      await this.#deps.engine.releaseShared(lease)
      await lease.closing
    }
    const callId = req.calls[0]!.id
    return await this.#untilFree(call, req, async () => {
      const answered = await this.#deps.engine.execute(req)
      const body = answered.status === 202 ? await this.#decided(call, req.batchId, callId, answered.body) : answered.body
      if (body === null) return { kind: 'ended', result: runEndedResult(callId, 'ended', undefined) }
      return { kind: 'answer', body: JSON.parse(body) as TurnAnswer }
    })
  }

  /**
   * Runs `attempt` until the run takes it: while another batch holds the run
   * (the batch route, another replica), waits and asks again, the wait
   * doubling up to a cap; a run no longer there or active answers as such.
   * A call the client cancelled before an attempt is cancelled: the engine
   * never has it (a refused attempt started nothing).
   */
  async #untilFree (call: OneCall, req: BatchRequest, attempt: () => Promise<Answered>): Promise<Answered> {
    let wait = BUSY_RETRY_MS
    for (;;) {
      if (call.signal.aborted) return CANCELLED
      try {
        return await attempt()
      } catch (err) {
        const ended = endedResult(err, req)
        if (ended !== null) return ended
        await this.#sleep(wait, call.signal)
        wait = Math.min(wait * 2, BUSY_RETRY_CAP_MS)
      }
    }
  }

  /** The run's shared lease that takes calls now: the open one, or a new one once the last one's release has landed. */
  async #lease (runId: string): Promise<SharedLease> {
    for (;;) {
      let calls = this.#runs.get(runId)
      if (calls === undefined) this.#runs.set(runId, calls = { schedule: new ArrivalSchedule(), lease: null })
      const lease = calls.lease
      if (lease !== null && lease.open) return lease
      if (lease?.closing != null) {
        await lease.closing
        if (calls.lease !== lease) continue
      }
      const schedule = calls.schedule
      // The last answer keeps the lease when another call under it is in flight (waiting, or on its way in), besides its own.
      calls.lease = new SharedLease(`mcp_lease_${randomUUID()}`, runId, () => schedule.sharing > 1)
      return calls.lease
    }
  }

  /** A call left: a lease no call is under and none waits for is released; a run with nothing in flight is forgotten. */
  #afterCall (runId: string): void {
    const calls = this.#runs.get(runId)
    if (calls === undefined) return
    const lease = calls.lease
    if (lease !== null && lease.taken && lease.inside === 0 && calls.schedule.sharing === 0) {
      this.#deps.engine.releaseShared(lease).catch(() => {}).finally(() => this.#tidy(runId))
      return
    }
    this.#tidy(runId)
  }

  #tidy (runId: string): void {
    const calls = this.#runs.get(runId)
    if (calls === undefined || !calls.schedule.idle) return
    const lease = calls.lease
    if (lease === null || (!lease.taken && lease.inside === 0 && lease.closing === null)) {
      this.#runs.delete(runId)
      return
    }
    // Its release lands first: a call after it starts from a clean slate.
    if (lease.closing !== null) void lease.closing.then(() => { if (this.#runs.get(runId) === calls && calls.schedule.idle) this.#runs.delete(runId) })
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
    // Cancelled as it was being held (after the engine last looked at the signal): the listener never hears it.
    if (call.signal.aborted) onCancel()
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

/** A call's batch answered, or a result the run's state gives (ended, terminated), or cancelled before the engine had it. */
type Answered =
  | { kind: 'answer', body: TurnAnswer }
  | { kind: 'ended', result: McpToolResult }
  | { kind: 'cancelled' }

/** A call the client cancelled before it started: recorded as such, and MCP sends no answer. */
const CANCELLED: Answered = Object.freeze({ kind: 'cancelled' })

/** What a call came to: its result, or cancelled before it started (with its calls as prepared first, if they were). */
type Taken =
  | { kind: 'result', result: McpToolResult }
  | { kind: 'cancelled', first: PreparedFirst | undefined }

/** The result of a call the engine refused because the run is no longer there or active; null for a busy run (it waits). */
function endedResult (err: unknown, req: BatchRequest): Answered | null {
  if (!(err instanceof ProblemError)) throw err
  const callId = req.calls[0]!.id
  if (err.code === 'run_not_active') {
    const reason = err.extra?.terminationReason as string | undefined
    return { kind: 'ended', result: runEndedResult(callId, reason === 'ended' || reason === 'cancelled' ? reason : 'terminated', reason) }
  }
  if (err.code === 'run_not_found') return { kind: 'ended', result: runEndedResult(callId, 'ended', undefined) }
  if (err.code !== 'run_busy') throw err
  return null
}

/**
 * Where a prepared call stands in its run's schedule: a call a guard may
 * hold runs alone, as does one that could not be prepared before it was
 * sent (its conflict key is not known yet); a call refused by preparation
 * sends nothing and holds nothing up.
 */
function classOf (first: PreparedFirst | undefined, options: OneCall['options']): ArrivalClass {
  const maxConcurrent = options.maxConcurrentTools
  const o = first?.ready.prepared.outcomes[0]
  if (first === undefined || o === undefined || first.holds) return { overlap: false, alone: true, readOnly: false, conflictKey: null, maxConcurrent }
  if (!o.ok) return { overlap: true, alone: false, readOnly: true, conflictKey: null, maxConcurrent }
  return { overlap: isEligibleToOverlap({ readOnly: o.tool.readOnly, execution: o.tool.execution }, options.toolExecution), alone: false, readOnly: o.tool.readOnly, conflictKey: o.conflictKey, maxConcurrent }
}

/** The write of a one-call answer whose outcome is unknown (it blocks the run's writes that wait behind it), if it is one. */
function uncertainOf (answer: TurnAnswer): UncertainWrite | null {
  const r = answer.results[0]
  if (r === undefined) return null
  const details = r.details as { receipt?: { status?: string }, conflictKey?: string }
  if (r.status !== 'uncertain' && details.receipt?.status !== 'uncertain') return null
  return { callId: r.callId, conflictKey: details.conflictKey ?? null }
}
