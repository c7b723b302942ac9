import { EventEmitter } from 'node:events'
import { Agent, errors as undiciErrors } from 'undici'

/** What was sent and what came back, before any tool-level meaning is given to it. */
export type ExecutorAnswer =
  /** A definitive HTTP answer (2xx, 3xx or 4xx). `body` is parsed JSON, or undefined when it was not JSON. */
  | { kind: 'answered', status: number, body: unknown, bodyText: string }
  /** A definitive failure before the request was sent: the executor never saw it. */
  | { kind: 'unsent', code: string }
  /** The request may have reached the executor and no definitive answer came. */
  | { kind: 'unknown', code: string, status?: number }

export interface ExecutorRequest {
  url: string
  timeoutMs: number
  body: string
  headers: Record<string, string>
  /** Aborting settles the request as `unknown` (or `unsent` if it never left). */
  signal?: AbortSignal
}

export interface ExecutorClientOptions {
  maxResponseBytes: number
  /** Connect timeout cap; a connect that times out is a failure before sending. */
  connectTimeoutMs?: number
  keepAliveTimeoutMs?: number
  /** Sockets per executor origin. */
  connectionsPerOrigin?: number
}

// Failures that happen before a single byte of the request is written.
const UNSENT_CODES = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT', 'ERR_INVALID_URL', 'ERR_TLS_CERT_ALTNAME_INVALID', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'CERT_HAS_EXPIRED'
])

/**
 * The abort switch of one executor request, in the EventEmitter shape undici
 * accepts as a `signal`. An AbortController with its listener costs about
 * 6 µs per request on Node 20, an EventEmitter well under 1 µs, and there is
 * one per tool call.
 */
class CallAbort extends EventEmitter {
  aborted = false
  reason: unknown = undefined

  abort (): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = new undiciErrors.RequestAbortedError()
    this.emit('abort')
  }
}

class ResponseTooLarge extends Error {
  readonly code = 'response_too_large'
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
    this.#opts = { connectTimeoutMs: 10_000, keepAliveTimeoutMs: 10_000, connectionsPerOrigin: 128, ...opts }
    this.#agent = new Agent({
      connections: this.#opts.connectionsPerOrigin,
      keepAliveTimeout: this.#opts.keepAliveTimeoutMs,
      connect: { timeout: this.#opts.connectTimeoutMs }
    })
  }

  async post (req: ExecutorRequest): Promise<ExecutorAnswer> {
    const abort = new CallAbort()
    const timeout = { aborted: false }
    const timer = setTimeout(() => {
      timeout.aborted = true
      abort.abort()
    }, req.timeoutMs)
    const forward = (): void => abort.abort()
    req.signal?.addEventListener('abort', forward, { once: true })
    if (req.signal?.aborted === true) abort.abort()
    try {
      return await this.#exchange(req, abort, timeout)
    } finally {
      clearTimeout(timer)
      req.signal?.removeEventListener('abort', forward)
    }
  }

  async #exchange (req: ExecutorRequest, signal: CallAbort, timeout: { aborted: boolean }): Promise<ExecutorAnswer> {
    const target = this.#target(req.url)
    let res
    try {
      res = await this.#agent.request({
        origin: target.origin,
        path: target.path,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...req.headers },
        body: req.body,
        signal,
        headersTimeout: req.timeoutMs,
        bodyTimeout: req.timeoutMs
      })
    } catch (err) {
      return failure(err, timeout.aborted)
    }

    const status = res.statusCode
    const declared = Number(res.headers['content-length'])
    if (Number.isFinite(declared) && declared > this.#opts.maxResponseBytes) {
      discard(res.body)
      return { kind: 'unknown', code: 'response_too_large', status }
    }
    let text: string
    try {
      // A declared length within the cap can be read in one go.
      text = Number.isFinite(declared) ? await res.body.text() : await readCapped(res.body, this.#opts.maxResponseBytes)
    } catch (err) {
      if (err instanceof ResponseTooLarge) return { kind: 'unknown', code: err.code, status }
      return { kind: 'unknown', code: errorCode(err, timeout.aborted), status }
    }
    if (status >= 500) return { kind: 'unknown', code: 'executor_5xx', status }
    let body: unknown
    if (text.length > 0) {
      try { body = JSON.parse(text) } catch { body = undefined }
    }
    return { kind: 'answered', status, body, bodyText: text }
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

async function readCapped (body: AsyncIterable<Buffer> & Parameters<typeof discard>[0], max: number): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.length
    if (size > max) {
      discard(body)
      throw new ResponseTooLarge('response too large')
    }
    chunks.push(chunk)
  }
  return chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')
}

/**
 * Drops a body without reading the rest. Destroying an undici body emits
 * 'error' (RequestAbortedError); unheard, that would be an uncaught exception.
 */
function discard (body: { destroy: (err?: Error) => void, on: (event: 'error', fn: () => void) => unknown }): void {
  body.on('error', () => {})
  body.destroy()
}

function errorCode (err: unknown, timedOut: boolean): string {
  if (timedOut) return 'timeout'
  if (err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError) return 'timeout'
  if (err instanceof undiciErrors.RequestAbortedError || (err as Error)?.name === 'AbortError') return 'aborted'
  const code = (err as { code?: unknown })?.code
  return typeof code === 'string' ? code : 'request_failed'
}

function failure (err: unknown, timedOut: boolean): ExecutorAnswer {
  // A connect failure says nothing was sent, even when the tool's timeout
  // fired meanwhile; undici may wrap it, so look at the cause as well.
  const own = (err as { code?: unknown })?.code
  const cause = (err as { cause?: { code?: unknown } })?.cause?.code
  if (typeof own === 'string' && UNSENT_CODES.has(own)) return { kind: 'unsent', code: own }
  if (typeof cause === 'string' && UNSENT_CODES.has(cause)) return { kind: 'unsent', code: cause }
  return { kind: 'unknown', code: errorCode(err, timedOut) }
}
