import type { Logger } from 'pino'
import type { LoopKind } from '../model/loops.js'
import type { ExecutorFailureCause } from './executor-failure.js'
import type { BatchInfo, BatchObserver, CallInfo, CallSettledInfo } from './types.js'

/** Failures that are the tool's own answer (the model may have asked for something wrong), logged at info; the rest are the executor's trouble, at warn. */
const ANSWERED_CAUSES: ReadonlySet<ExecutorFailureCause> = new Set(['is_error', 'http_4xx', 'jsonrpc_error'])

/**
 * A batch's log lines for what is worth a line of its own: executor
 * failures (one line per call, with its cause), uncertain writes, repeats
 * and loops, projection failures, terminations, a slow preparation. Each is
 * bound to the request (`reqId`), the run, the batch and the caller (tenant
 * and key name, never the key); never arguments or bodies. At debug, the
 * batch's start, each epoch and each call that has no line of its own are
 * written too. The batch's own line is its request's line
 * (src/http/access-log.ts), written once the answer is sent.
 */
export class BatchLog implements BatchObserver {
  readonly #parent: Logger
  readonly #info: BatchInfo
  readonly #debug: boolean
  /** pino's child with the batch's bindings, made at the first line: most batches write none. */
  #child: Logger | null = null

  constructor (log: Logger, info: BatchInfo) {
    this.#parent = log
    this.#info = info
    this.#debug = log.isLevelEnabled('debug')
    if (this.#debug) this.#log().debug({ turn: info.turn, calls: info.calls, mode: info.mode }, 'batch started')
  }

  epochSettled (epoch: number, size: number, durationMs: number): void {
    if (this.#debug) this.#log().debug({ epoch, size, durationMs: round(durationMs) }, 'epoch settled')
  }

  callSettled (c: CallSettledInfo): void {
    const f = c.failure
    if (c.uncertain) {
      const fields: Record<string, string | number> = { callId: c.callId, tool: c.tool, status: c.status }
      const cause = f?.cause ?? c.reason
      if (cause !== undefined) fields.cause = cause
      if (f?.code !== undefined) fields.code = f.code
      if (f?.httpStatus !== undefined) fields.httpStatus = f.httpStatus
      if (c.durationMs !== null) fields.durationMs = round(c.durationMs)
      this.#log().warn(fields, 'write outcome uncertain')
    } else if (f !== undefined) {
      const fields: Record<string, string | number> = { callId: c.callId, tool: c.tool, executor: c.executor ?? 'http', status: c.status, cause: f.cause }
      if (f.code !== undefined) fields.code = f.code
      if (f.httpStatus !== undefined) fields.httpStatus = f.httpStatus
      if (c.durationMs !== null) fields.durationMs = round(c.durationMs)
      this.#log()[ANSWERED_CAUSES.has(f.cause) ? 'info' : 'warn'](fields, 'tool call failed')
    } else if (this.#debug) {
      const fields: Record<string, string | number> = { callId: c.callId, tool: c.tool, status: c.status }
      if (c.epoch !== null) fields.epoch = c.epoch
      if (c.durationMs !== null) fields.durationMs = round(c.durationMs)
      if (c.reason !== undefined) fields.reason = c.reason
      this.#log().debug(fields, 'call settled')
    }
  }

  repeatDetected (c: CallInfo, action: 'advisory' | 'terminated', count: number, kind: LoopKind = 'exact'): void {
    this.#log().info({ callId: c.callId, tool: c.tool, kind, action, count }, kind === 'exact' ? 'exact repeat detected' : 'loop detected')
  }

  projectionFailed (c: CallInfo, problem: string): void {
    this.#log().warn({ callId: c.callId, tool: c.tool, problem }, 'receipt projection failed')
  }

  preparationSlow (durationMs: number): void {
    this.#log().warn({ calls: this.#info.calls, durationMs: round(durationMs) }, 'slow batch preparation')
  }

  runTerminated (reason: string): void {
    this.#log().info({ reason }, 'run terminated')
  }

  #log (): Logger {
    return (this.#child ??= this.#parent.child(batchBindings(this.#info)))
  }
}

/** What every line of a batch is bound to: its request, run, batch and caller. */
export function batchBindings (info: { runId: string, reqId?: string | undefined, batchId?: string | undefined, tenant?: string | undefined, keyName?: string | undefined }): Record<string, string> {
  const b: Record<string, string> = {}
  if (info.reqId !== undefined) b.reqId = info.reqId
  b.runId = info.runId
  if (info.batchId !== undefined) b.batchId = info.batchId
  if (info.tenant !== undefined) b.tenant = info.tenant
  if (info.keyName !== undefined) b.keyName = info.keyName
  return b
}

/** Durations to a tenth of a millisecond. */
function round (ms: number): number {
  return Math.round(ms * 10) / 10
}
