import { Agent, type Dispatcher, errors as undiciErrors } from 'undici'
import { type Clock, type TimerHandle, systemClock } from '../clock.js'
import type { HttpAnswer } from './executor.js'

export interface ExecutorRequest {
  url: string
  timeoutMs: number
  /** JSON text. */
  body: string
  /** Sent as the Idempotency-Key header (the call's operation id). */
  idempotencyKey?: string
  /** Trace context headers (`traceparent`, `tracestate`). */
  trace?: Readonly<Record<string, string>> | undefined
  /** Sent as the Toolgate-Fencing-Token header: the call holds a tenant-scoped conflict key (SPEC section 17). */
  fencingToken?: string | undefined
}

export interface ExecutorClientOptions {
  maxResponseBytes: number
  /** Connect timeout cap; a connect that times out is a failure before sending. */
  connectTimeoutMs?: number
  keepAliveTimeoutMs?: number
  /** Sockets per executor origin. */
  connectionsPerOrigin?: number
  /** Runs the tools' timeouts. @default systemClock */
  clock?: Clock
}

/** Failures that happen before a single byte of the request is written. */
export const UNSENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT', 'ERR_INVALID_URL', 'ERR_TLS_CERT_ALTNAME_INVALID', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'CERT_HAS_EXPIRED'
])

class ResponseTooLarge extends Error {
  readonly code = 'response_too_large'
}

/** What a timed-out exchange is aborted with. */
class ToolTimeout extends Error {
  readonly code = 'timeout'
}

/**
 * One request to an executor, as an undici dispatch handler: the body is
 * collected (up to the size cap) straight from the socket's chunks, and the
 * tool's timer aborts through undici's own controller. No Readable stream
 * and no AbortSignal per call: this runs once per tool call.
 */
class Exchange implements Dispatcher.DispatchHandler {
  readonly #maxBytes: number
  readonly #resolve: (answer: HttpAnswer) => void
  readonly #clock: Clock
  #controller: Dispatcher.DispatchController | null = null
  #timer: TimerHandle | null = null
  #timedOut = false
  #settled = false
  #status: number | null = null
  #chunks: Buffer[] = []
  #size = 0

  constructor (maxBytes: number, resolve: (answer: HttpAnswer) => void, clock: Clock) {
    this.#maxBytes = maxBytes
    this.#resolve = resolve
    this.#clock = clock
  }

  startTimer (ms: number): void {
    this.#timer = this.#clock.setTimeout(() => {
      this.#timedOut = true
      if (this.#controller === null) {
        // Not written yet (waiting for a socket, or connecting): it never will be,
        // since onRequestStart aborts it, so the executor cannot have acted.
        this.#settle({ kind: 'unsent', code: 'timeout' })
        return
      }
      this.#controller.abort(new ToolTimeout('tool timeout'))
      this.#settle(this.#status === null ? { kind: 'unknown', code: 'timeout' } : { kind: 'unknown', code: 'timeout', status: this.#status })
    }, ms)
  }

  /** Called just before the request is written; aborting here writes nothing. */
  onRequestStart (controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#settled) controller.abort(new ToolTimeout('tool timeout'))
  }

  onResponseStart (controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200) return
    this.#status = statusCode
    const declared = Number(headers['content-length'])
    if (Number.isFinite(declared) && declared > this.#maxBytes) this.#tooLarge(controller)
  }

  onResponseData (controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return
    this.#size += chunk.length
    if (this.#size > this.#maxBytes) this.#tooLarge(controller)
    else this.#chunks.push(chunk)
  }

  onResponseEnd (): void {
    if (this.#settled) return
    const status = this.#status ?? 0
    if (status >= 500) {
      this.#settle({ kind: 'unknown', code: 'executor_5xx', status })
      return
    }
    const chunks = this.#chunks
    const text = chunks.length === 0 ? '' : chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')
    let body: unknown
    if (text.length > 0) {
      try { body = JSON.parse(text) } catch { body = undefined }
    }
    this.#settle({ kind: 'answered', status, body, bodyText: text })
  }

  onResponseError (_controller: Dispatcher.DispatchController | null, err: Error): void {
    if (this.#settled) return
    // Once the status line came, the executor saw the request: whatever fails after is `unknown`.
    if (this.#status !== null) this.#settle({ kind: 'unknown', code: errorCode(err, this.#timedOut), status: this.#status })
    else this.#settle(failure(err, this.#timedOut))
  }

  #tooLarge (controller: Dispatcher.DispatchController): void {
    this.#settle({ kind: 'unknown', code: 'response_too_large', status: this.#status! })
    controller.abort(new ResponseTooLarge('response too large'))
  }

  #settle (answer: HttpAnswer): void {
    if (this.#settled) return
    this.#settled = true
    if (this.#timer !== null) this.#clock.clearTimeout(this.#timer)
    this.#chunks = []
    this.#resolve(answer)
  }
}

/**
 * The HTTP client of every executor: one shared undici Agent (a keep-alive
 * pool per origin), no redirects followed, a body-size cap, and answers
 * classified by whether the executor may have acted.
 */
export class ExecutorClient {
  readonly #agent: Agent
  readonly #targets = new Map<string, { origin: string, path: string }>()
  readonly #opts: Required<ExecutorClientOptions>

  constructor (opts: ExecutorClientOptions) {
    this.#opts = { connectTimeoutMs: 10_000, keepAliveTimeoutMs: 10_000, connectionsPerOrigin: 128, clock: systemClock, ...opts }
    this.#agent = new Agent({
      connections: this.#opts.connectionsPerOrigin,
      keepAliveTimeout: this.#opts.keepAliveTimeoutMs,
      connect: { timeout: this.#opts.connectTimeoutMs }
    })
  }

  /**
   * Sends one request and answers how it went; never rejects. The tool's
   * timeout covers the whole exchange, queueing for a socket included.
   */
  post (req: ExecutorRequest): Promise<HttpAnswer> {
    return new Promise((resolve) => {
      const exchange = new Exchange(this.#opts.maxResponseBytes, resolve, this.#opts.clock)
      try {
        const target = this.#target(req.url)
        exchange.startTimer(req.timeoutMs)
        this.#agent.dispatch({
          origin: target.origin,
          path: target.path,
          method: 'POST',
          headers: requestHeaders(req),
          body: req.body,
          // The tool's own timer (above) is the one deadline: undici's timers
          // run on a coarse clock and could cut an exchange before `timeoutMs`.
          headersTimeout: 0,
          bodyTimeout: 0
        }, exchange)
      } catch (err) {
        exchange.onResponseError(null, err as Error)
      }
    })
  }

  async close (): Promise<void> {
    await this.#agent.close()
  }

  /** Origin and path of an executor URL, parsed once per URL. */
  #target (url: string): { origin: string, path: string } {
    let target = this.#targets.get(url)
    if (target === undefined) {
      const u = new URL(url)
      target = { origin: u.origin, path: u.pathname + u.search }
      if (this.#targets.size >= 10_000) this.#targets.clear()
      this.#targets.set(url, target)
    }
    return target
  }
}

/** The headers of an executor request, built as one object: this runs once per tool call. */
function requestHeaders (req: ExecutorRequest): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' }
  if (req.idempotencyKey !== undefined) headers['idempotency-key'] = req.idempotencyKey
  if (req.fencingToken !== undefined) headers['toolgate-fencing-token'] = req.fencingToken
  const trace = req.trace
  if (trace !== undefined) for (const name in trace) headers[name] = trace[name]!
  return headers
}

function errorCode (err: unknown, timedOut: boolean): string {
  if (timedOut) return 'timeout'
  if (err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError) return 'timeout'
  if (err instanceof undiciErrors.RequestAbortedError || (err as Error)?.name === 'AbortError') return 'aborted'
  const code = (err as { code?: unknown })?.code
  return typeof code === 'string' ? code : 'request_failed'
}

function failure (err: unknown, timedOut: boolean): HttpAnswer {
  // A connect failure says nothing was sent, even when the tool's timeout
  // fired meanwhile; undici may wrap it, so look at the cause as well.
  const own = (err as { code?: unknown })?.code
  const cause = (err as { cause?: { code?: unknown } })?.cause?.code
  if (typeof own === 'string' && UNSENT_CODES.has(own)) return { kind: 'unsent', code: own }
  if (typeof cause === 'string' && UNSENT_CODES.has(cause)) return { kind: 'unsent', code: cause }
  return { kind: 'unknown', code: errorCode(err, timedOut) }
}
