import { randomBytes } from 'node:crypto'
import {
  type Attributes, type Context, ProxyTracerProvider, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode,
  type Tracer, context, defaultTextMapGetter, defaultTextMapSetter, isSpanContextValid, trace
} from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import type { LoopKind } from '../model/loops.js'
import type { BatchInfo, BatchObserver, BatchOutcome, CallInfo, CallSettledInfo } from './types.js'

/** The instrumentation scope of toolgate's spans. */
export const TRACER_NAME = 'toolgate'

/** Name of the span event a repeat detection adds to the batch's span. */
export const REPEAT_EVENT = 'kernel.toolrepeatdetected'

/**
 * Name of the span event a call that never ran (rejected, blocked, cancelled
 * or terminated before dispatch, held for approval) adds to the batch's span:
 * an ERROR `execute_tool` span for it would count as a tool failing.
 */
export const NOT_RUN_EVENT = 'toolgate.call.not_run'

/**
 * Attribute names: OpenTelemetry's GenAI conventions for tool execution
 * (`execute_tool` spans), `error.type`, and toolgate's own. Never arguments,
 * conflict keys or fingerprints: they are derived from arguments.
 */
export const ATTR = {
  operationName: 'gen_ai.operation.name',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  toolDescription: 'gen_ai.tool.description',
  conversationId: 'gen_ai.conversation.id',
  errorType: 'error.type',
  runId: 'toolgate.run_id',
  batchId: 'toolgate.batch_id',
  tenant: 'toolgate.tenant',
  turn: 'toolgate.turn',
  batchSize: 'toolgate.batch.size',
  toolExecution: 'toolgate.tool_execution',
  batchOutcome: 'toolgate.batch.outcome',
  terminationReason: 'toolgate.run.termination_reason',
  epoch: 'toolgate.epoch',
  epochSize: 'toolgate.epoch.size',
  callStatus: 'toolgate.call.status',
  callUncertain: 'toolgate.call.uncertain',
  projectionProblem: 'toolgate.projection.problem',
  repeatAction: 'toolgate.repeat.action',
  repeatCount: 'toolgate.repeat.count',
  repeatKind: 'toolgate.repeat.kind'
} as const

// The W3C propagator ships in @opentelemetry/core; the api alone only has a no-op one.
const propagator = new W3CTraceContextPropagator()

/** Longest tool name put on a span: an unknown name is the model's text. */
const MAX_NAME = 128
/** Longest tool description put on a span (an operator's or an MCP server's text). */
const MAX_DESCRIPTION = 1024

/**
 * The tracer of a registered tracer provider, or null when none is: then no
 * span is made at all, and a batch costs one random id per call.
 */
export function activeTracer (): Tracer | null {
  const provider = trace.getTracerProvider()
  if (provider instanceof ProxyTracerProvider) return provider.getDelegateTracer(TRACER_NAME) ?? null
  return provider.getTracer(TRACER_NAME)
}

/**
 * The tracing side of one batch: a span per batch, per epoch (child of the
 * batch) and per call (child of its epoch), and the `traceparent` each
 * executor request carries. Without a tracer provider, executors still get a
 * `traceparent` (not sampled) that continues the caller's trace when there is one.
 */
export function tracingObserver (info: BatchInfo, tracer: Tracer | null = activeTracer()): BatchObserver {
  const parent = incomingContext(info)
  if (tracer === null) return propagationOnly(parent)
  // Inside a traced request the batch is a child of the request's SERVER span, which continued the caller's context.
  const active = context.active()
  return new BatchTrace(tracer, info, trace.getSpan(active) === undefined ? parent : active)
}

/** The trace context of the batch's request, or the root context. */
function incomingContext (info: BatchInfo): Context {
  if (info.traceparent === undefined) return ROOT_CONTEXT
  const carrier: Record<string, string> = { traceparent: info.traceparent }
  if (info.tracestate !== undefined) carrier.tracestate = info.tracestate
  return extractContext(carrier)
}

/** The W3C trace context in `traceparent` / `tracestate` headers, on the root context. */
export function extractContext (headers: Readonly<Record<string, string | string[] | undefined>>): Context {
  return propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter)
}

/** The `traceparent` (and `tracestate`) headers of a context's span. */
export function injectContext (ctx: Context): Record<string, string> {
  const headers: Record<string, string> = {}
  propagator.inject(ctx, headers, defaultTextMapSetter)
  return headers
}

const inject = injectContext

/**
 * A pino mixin: `trace_id` and `span_id` of the active span, on every line
 * written while one is (a request's handler runs with its SERVER span active,
 * src/telemetry/http-span.ts). The server passes it to its logger only when
 * spans are exported.
 */
export function traceLogFields (): Record<string, string> {
  const span = trace.getSpan(context.active())
  if (span === undefined) return {}
  const { traceId, spanId } = span.spanContext()
  return { trace_id: traceId, span_id: spanId }
}

/**
 * No tracer provider: as the api's no-op tracer would, pass the caller's
 * context on unchanged; with none, a new unsampled trace id per batch and
 * span id per request, so executors can still tell requests apart.
 */
function propagationOnly (parent: Context): BatchObserver {
  const incoming = trace.getSpanContext(parent)
  if (incoming !== undefined && isSpanContextValid(incoming)) return new FixedHeaders(inject(parent))
  return new FreshSpanIds(randomHex(16))
}

/** The caller's trace context, passed on unchanged to every executor. */
class FixedHeaders implements BatchObserver {
  readonly #headers: Record<string, string>
  constructor (headers: Record<string, string>) { this.#headers = headers }
  executorHeaders (): Record<string, string> { return { ...this.#headers } }
}

/** One unsampled trace id for the batch, a new span id per executor request. */
class FreshSpanIds implements BatchObserver {
  readonly #traceId: string
  constructor (traceId: string) { this.#traceId = traceId }
  // Built directly: the W3C format is fixed, and the propagator is costly on the hot path.
  executorHeaders (): Record<string, string> { return { traceparent: `00-${this.#traceId}-${randomHex(8)}-00` } }
}

/** Random ids from a pooled buffer: one crypto call per 4 KiB instead of one per id. */
const POOL_SIZE = 4096
let pool = randomBytes(POOL_SIZE)
let poolOffset = 0
export function randomHex (bytes: number): string {
  if (poolOffset + bytes > POOL_SIZE) {
    pool = randomBytes(POOL_SIZE)
    poolOffset = 0
  }
  const hex = pool.toString('hex', poolOffset, poolOffset + bytes)
  poolOffset += bytes
  // An all-zero id is invalid in W3C trace context; astronomically rare, but cheap to rule out.
  return /^0+$/.test(hex) ? randomHex(bytes) : hex
}

interface Scope { span: Span, ctx: Context }

/** The spans of one batch, kept by epoch and call id until they end. */
class BatchTrace implements BatchObserver {
  readonly #tracer: Tracer
  readonly #info: BatchInfo
  readonly #batch: Scope
  readonly #epochs = new Map<number, Scope>()
  readonly #calls = new Map<string, Scope>()

  constructor (tracer: Tracer, info: BatchInfo, parent: Context) {
    this.#tracer = tracer
    this.#info = info
    const span = tracer.startSpan('toolgate.batch', {
      kind: SpanKind.INTERNAL,
      attributes: {
        [ATTR.runId]: info.runId,
        [ATTR.batchId]: info.batchId,
        [ATTR.conversationId]: info.runId,
        [ATTR.tenant]: info.tenant,
        [ATTR.turn]: info.turn,
        [ATTR.batchSize]: info.calls,
        [ATTR.toolExecution]: info.mode
      }
    }, parent)
    this.#batch = { span, ctx: trace.setSpan(parent, span) }
  }

  epochStarted (epoch: number, size: number): void {
    const span = this.#tracer.startSpan('toolgate.epoch', {
      kind: SpanKind.INTERNAL,
      attributes: { [ATTR.runId]: this.#info.runId, [ATTR.batchId]: this.#info.batchId, [ATTR.epoch]: epoch, [ATTR.epochSize]: size }
    }, this.#batch.ctx)
    this.#epochs.set(epoch, { span, ctx: trace.setSpan(this.#batch.ctx, span) })
  }

  epochSettled (epoch: number): void {
    this.#epochs.get(epoch)?.span.end()
    this.#epochs.delete(epoch)
  }

  callStarted (call: CallInfo): void {
    this.#calls.set(call.callId, this.#startCall(call))
  }

  executorHeaders (call: CallInfo): Record<string, string> {
    return inject((this.#calls.get(call.callId) ?? this.#batch).ctx)
  }

  callSettled (call: CallSettledInfo): void {
    const scope = this.#calls.get(call.callId)
    if (scope === undefined) {
      this.#notRun(call)
      return
    }
    const { span } = scope
    this.#calls.delete(call.callId)
    span.setAttribute(ATTR.callStatus, call.status)
    if (call.uncertain) span.setAttribute(ATTR.callUncertain, true)
    if (call.status !== 'ok') {
      const errorType = call.reason ?? call.status
      span.setAttribute(ATTR.errorType, errorType)
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorType })
    }
    span.end()
  }

  repeatDetected (call: CallInfo, action: 'advisory' | 'terminated', count: number, kind: LoopKind = 'exact'): void {
    this.#batch.span.addEvent(REPEAT_EVENT, {
      [ATTR.repeatKind]: kind,
      [ATTR.toolName]: toolName(call),
      [ATTR.toolCallId]: call.callId,
      [ATTR.repeatAction]: action,
      [ATTR.repeatCount]: count
    })
  }

  projectionFailed (call: CallInfo, problem: string): void {
    this.#calls.get(call.callId)?.span.setAttribute(ATTR.projectionProblem, problem)
  }

  runTerminated (reason: string): void {
    this.#batch.span.setAttribute(ATTR.terminationReason, reason)
  }

  batchCompleted (outcome: BatchOutcome): void {
    // Anything still open (a bug upstream) ends with the batch rather than leaking.
    for (const { span } of this.#calls.values()) span.end()
    for (const { span } of this.#epochs.values()) span.end()
    this.#calls.clear()
    this.#epochs.clear()
    const { span } = this.#batch
    span.setAttribute(ATTR.batchOutcome, outcome)
    if (outcome === 'closed') {
      span.setAttribute(ATTR.errorType, 'projection_failed')
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'projection_failed' })
    }
    span.end()
  }

  /** A call that settled without being dispatched: an event on the batch's span, not a failed tool span. */
  #notRun (call: CallSettledInfo): void {
    const attributes: Attributes = { [ATTR.toolName]: toolName(call), [ATTR.toolCallId]: call.callId, [ATTR.callStatus]: call.status }
    if (call.reason !== undefined) attributes[ATTR.errorType] = call.reason
    this.#batch.span.addEvent(NOT_RUN_EVENT, attributes)
  }

  /** An `execute_tool` span (GenAI conventions: kind INTERNAL), child of its epoch when that runs. */
  #startCall (call: CallInfo): Scope {
    const parent = (call.epoch === null ? undefined : this.#epochs.get(call.epoch)) ?? this.#batch
    const name = toolName(call)
    const attributes: Attributes = {
      [ATTR.operationName]: 'execute_tool',
      [ATTR.toolName]: name,
      [ATTR.toolCallId]: call.callId,
      [ATTR.toolType]: 'function',
      [ATTR.conversationId]: this.#info.runId,
      [ATTR.runId]: this.#info.runId,
      [ATTR.batchId]: this.#info.batchId
    }
    if (call.epoch !== null) attributes[ATTR.epoch] = call.epoch
    if (call.description !== undefined && call.description !== '') attributes[ATTR.toolDescription] = call.description.slice(0, MAX_DESCRIPTION)
    // A name that resolved to no tool stays out of the span name, which must keep a small set of values.
    const span = this.#tracer.startSpan(call.known ? `execute_tool ${name}` : 'execute_tool', { kind: SpanKind.INTERNAL, attributes }, parent.ctx)
    return { span, ctx: trace.setSpan(parent.ctx, span) }
  }
}

function toolName (call: CallInfo): string {
  return call.tool.length > MAX_NAME ? call.tool.slice(0, MAX_NAME) : call.tool
}
