/**
 * Questions an MCP server asks during a call (`elicitation/create`, SPEC
 * section 18): each is a pending approval of that call, answered by whoever
 * decides first: a person (the approvals inbox, API or page), the MCP client
 * that made the call (SPEC section 16), or the clock (expiry answers
 * `cancel`). A question whose call ends first, or that the server withdraws,
 * leaves the inbox (answered `cancel`).
 *
 * Unlike a held batch, the call is already running on this replica, its
 * connection to the server waiting for the answer: so the question lives
 * here, in this process, beside that connection, not in the run's record.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import type { Clock, TimerHandle } from '../clock.js'
import type { CallRelay } from '../dispatch/relays.js'
import { ProblemError } from '../errors.js'
import { linearRegExp } from '../model/linear-regexp.js'
import { boundedValidate, DEFAULT_MAX_VALIDATION_MS } from '../tools/bounded-validate.js'
import { DEFAULT_MAX_SCHEMA_BYTES, SCHEMA_LIMITS, schemaCostProblems } from '../tools/schema-cost.js'
import type { DecisionInput, PendingApproval } from './types.js'

/** What a server asks (form mode): a message and the flat object schema of the answer. */
export interface ElicitationQuestion { message: string, requestedSchema: Record<string, unknown> }
/** MCP's answer to `elicitation/create`. */
export interface ElicitationAnswer { action: 'accept' | 'decline' | 'cancel', content?: Record<string, unknown> }

/** The running call a question is about. */
export interface QuestionedCall { tenant: string, runId: string, batchId: string, callId: string, tool: string, arguments: Record<string, unknown> }

/** What ends a question before anyone answers it: the server withdrawing its request, or the call it is about ending. */
export interface QuestionSignals { request: AbortSignal, call: AbortSignal }

/**
 * Who or what answered a question: a person, the MCP client, expiry, the
 * server withdrawing it (`server`), or its call ending first (`call_ended`).
 */
export type AnsweredBy = 'person' | 'client' | 'expiry' | 'server' | 'call_ended'

/** A question waiting for its answer, as the inbox shows it. */
export interface PendingElicitation extends PendingApproval { runId: string, batchId: string, elicitation: ElicitationQuestion }

interface Entry {
  call: QuestionedCall
  question: ElicitationQuestion
  validate: ValidateFunction
  requestedAt: number
  expiresAt: number
  timer: TimerHandle
  /** Aborted once answered: withdraws the question put to the MCP client. */
  withdraw: AbortController
  finish: (answer: ElicitationAnswer) => void
}

export interface ElicitationOptions {
  clock: Clock
  /** How long a question waits for an answer (TOOLGATE_APPROVAL_TTL_SECONDS). */
  ttlMs: number
  /** The tenant of a run (undefined: it is gone): the question is in that tenant's inbox. */
  tenantOf: (runId: string) => Promise<string | undefined>
  /** Told of each answer: ids and the action only. */
  onAnswered?: (call: QuestionedCall, action: ElicitationAnswer['action'], by: AnsweredBy) => void
}

const DECLINE: ElicitationAnswer = Object.freeze({ action: 'decline' })
const CANCEL: ElicitationAnswer = Object.freeze({ action: 'cancel' })

export class Elicitations {
  readonly #opts: ElicitationOptions
  readonly #pending = new Map<string, Entry>()
  /**
   * Schemas come from servers toolgate may not trust: patterns match in linear time, and the cost is checked before a compile.
   * A field the answer leaves out gets the schema's `default` (SEP-1034): validation fills it into the copy it checks.
   */
  readonly #ajv = new Ajv2020({ strict: false, allErrors: false, useDefaults: true, code: { regExp: linearRegExp } })

  constructor (opts: ElicitationOptions) {
    this.#opts = opts
  }

  /**
   * Puts a server's question about a running call to a person (the inbox)
   * and, when the call's caller is an MCP client, to it; answers the first
   * answer. A question that cannot be asked (a schema too costly, another
   * question of the same call waiting) is declined; one whose request is
   * withdrawn or whose call ends before an answer is answered `cancel`.
   */
  async ask (about: Omit<QuestionedCall, 'tenant'>, question: ElicitationQuestion, relay: CallRelay | undefined, signals: QuestionSignals): Promise<ElicitationAnswer> {
    const tenant = await this.#opts.tenantOf(about.runId).catch(() => undefined)
    if (tenant === undefined) return DECLINE
    const call: QuestionedCall = { ...about, tenant }
    const key = keyOf(call.runId, call.callId)
    if (signals.request.aborted || signals.call.aborted) return CANCEL
    if (this.#pending.has(key)) return DECLINE
    const validate = this.#compile(question.requestedSchema)
    if (validate === null) return DECLINE
    const { clock, ttlMs } = this.#opts
    const now = clock.now()
    return await new Promise((resolve) => {
      const withdraw = new AbortController()
      const settle = (answer: ElicitationAnswer, by: AnsweredBy): void => {
        if (this.#pending.get(key) !== entry) return
        this.#pending.delete(key)
        clock.clearTimeout(entry.timer)
        signals.request.removeEventListener('abort', onWithdrawn)
        signals.call.removeEventListener('abort', onCallEnded)
        // The client's question is withdrawn, unless its answer is the one that came.
        if (by !== 'client') withdraw.abort()
        this.#ajv.removeSchema(question.requestedSchema)
        this.#opts.onAnswered?.(call, answer.action, by)
        resolve(answer)
      }
      const onWithdrawn = (): void => { settle(CANCEL, 'server') }
      const onCallEnded = (): void => { settle(CANCEL, 'call_ended') }
      const entry: Entry = {
        call,
        question,
        validate,
        requestedAt: now,
        expiresAt: now + ttlMs,
        timer: clock.setTimeout(() => { settle(CANCEL, 'expiry') }, ttlMs),
        withdraw,
        finish: (answer) => { settle(answer, 'person') }
      }
      this.#pending.set(key, entry)
      signals.request.addEventListener('abort', onWithdrawn, { once: true })
      signals.call.addEventListener('abort', onCallEnded, { once: true })
      relay?.request('elicitation/create', { ...question }, withdraw.signal).then(
        (answer) => {
          const checked = clientAnswer(answer, validate)
          // An answer the client could not give properly leaves the question to a person.
          if (checked !== null) settle(checked, 'client')
        },
        () => { /* the client cannot be asked, or the question was withdrawn: a person answers */ }
      )
    })
  }

  /** The tenant's questions waiting for an answer. */
  pending (tenant: string): PendingElicitation[] {
    const out: PendingElicitation[] = []
    for (const e of this.#pending.values()) {
      if (e.call.tenant !== tenant) continue
      out.push({
        runId: e.call.runId,
        batchId: e.call.batchId,
        callId: e.call.callId,
        tool: e.call.tool,
        arguments: e.call.arguments,
        requestedAt: new Date(e.requestedAt).toISOString(),
        expiresAt: new Date(e.expiresAt).toISOString(),
        elicitation: e.question
      })
    }
    return out
  }

  /**
   * Answers the questions these decisions are about, all or none; false when
   * none of them is about a waiting question (they are for held calls).
   * `content` must match the requested schema (400 `invalid_request`).
   */
  decide (tenant: string, runId: string, batchId: string, decisions: ReadonlyArray<DecisionInput & { content?: unknown }>): boolean {
    const entries = decisions.map((d) => {
      const e = this.#pending.get(keyOf(runId, d.callId))
      return e !== undefined && e.call.tenant === tenant && e.call.batchId === batchId ? e : undefined
    })
    if (entries.every((e) => e === undefined)) return false
    if (entries.some((e) => e === undefined) || new Set(decisions.map((d) => d.callId)).size !== decisions.length) {
      throw new ProblemError('approval_not_pending', 'Every decision of a request must be for a waiting question of a server, or none.')
    }
    const answers = decisions.map((d, i): ElicitationAnswer => {
      if (!d.approve) return DECLINE
      const content = isObject(d.content) ? { ...d.content } : d.content ?? {}
      if (!isObject(content) || !entries[i]!.validate(content)) {
        throw new ProblemError('invalid_request', `The content for call ${d.callId} does not match the schema the server asked for.`)
      }
      return { action: 'accept', content }
    })
    entries.forEach((e, i) => { e!.finish(answers[i]!) })
    return true
  }

  #compile (schema: Record<string, unknown>): ValidateFunction | null {
    if (!isObject(schema) || schemaCostProblems(schema, { ...SCHEMA_LIMITS, maxBytes: DEFAULT_MAX_SCHEMA_BYTES }, '/requestedSchema').length > 0) return null
    try {
      return boundedValidate(this.#ajv.compile(schema), DEFAULT_MAX_VALIDATION_MS)
    } catch {
      return null
    }
  }
}

/** A client's answer as MCP has it; null when it is none (an accept whose content does not match). */
function clientAnswer (answer: Record<string, unknown>, validate: ValidateFunction): ElicitationAnswer | null {
  if (answer.action === 'decline' || answer.action === 'cancel') return { action: answer.action }
  if (answer.action !== 'accept') return null
  const content = isObject(answer.content) ? { ...answer.content } : answer.content ?? {}
  return isObject(content) && validate(content) ? { action: 'accept', content } : null
}

function isObject (v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function keyOf (runId: string, callId: string): string {
  return `${runId}\u0000${callId}`
}
