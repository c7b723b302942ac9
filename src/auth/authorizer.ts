import { Agent } from 'undici'
import type { ExternalAuthorizer } from '../prepare/authorize.js'
import type { StageResult } from '../prepare/types.js'
import { failed, httpPostShape, withClientSpan } from '../telemetry/client-spans.js'

export interface AuthorizerOptions {
  url: string
  timeoutMs: number
  /** Largest answer read; a larger one is no decision. @default 65536 */
  maxAnswerBytes?: number
}

/** A decision is a few dozen bytes; anything near this is not one. */
export const MAX_AUTHORIZER_ANSWER_BYTES = 64 * 1024

const NO_DECISION = 'The authorizer gave no decision; the call was not run.'

/**
 * Final authorization by an external policy engine in Open Policy Agent's
 * data-API shape: POST {"input": {...}}, answer {"result": true|false} or
 * {"result": {"allow": bool, "reason": string}}. Anything else, a late
 * answer or a failure rejects the call (fail closed).
 */
export function createAuthorizer (opts: AuthorizerOptions): ExternalAuthorizer {
  const agent = new Agent({ keepAliveTimeout: 10_000, connect: { timeout: opts.timeoutMs } })
  const url = new URL(opts.url)
  const maxBytes = opts.maxAnswerBytes ?? MAX_AUTHORIZER_ANSWER_BYTES
  const shape = httpPostShape(opts.url)
  // A CLIENT span per decision asked, under the active span (the request's), when tracing is on.
  return async (input) => await withClientSpan(undefined, () => shape, async (trace): Promise<Asked> => {
    try {
      const res = await agent.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...trace },
        body: JSON.stringify({ input }),
        signal: AbortSignal.timeout(opts.timeoutMs)
      })
      if (res.statusCode !== 200) {
        await res.body.dump()
        return { status: res.statusCode, decision: { ok: false, reason: 'unauthorized', message: 'The authorizer could not decide; the call was not run.' } }
      }
      const text = await readCapped(res.body, maxBytes)
      return { status: res.statusCode, decision: text === null ? noDecision() : decide(text) }
    } catch (err) {
      return { status: undefined, failure: (err as Error).name === 'TimeoutError' ? 'timeout' : 'unreachable', decision: { ok: false, reason: 'unauthorized', message: 'The authorizer could not be reached; the call was not run.' } }
    }
  }, (span, { status, failure }) => {
    if (status !== undefined) span.setAttribute('http.response.status_code', status)
    if (failure !== undefined) failed(span, failure)
    else if (status !== 200) failed(span, status)
  }).then(({ decision }) => decision)
}

/** What asking gave: the HTTP status, or why there was none, and the decision. */
interface Asked { status: number | undefined, failure?: string, decision: StageResult<void> }

function noDecision (): StageResult<void> {
  return { ok: false, reason: 'unauthorized', message: NO_DECISION }
}

/** The decision an OPA answer's text holds. */
function decide (text: string): StageResult<void> {
  const result = resultOf(text)
  if (result === true) return { ok: true, value: undefined }
  if (result === false) return { ok: false, reason: 'policy_denied', message: 'The host policy does not allow this call.' }
  if (typeof result === 'object' && result !== null && typeof (result as { allow?: unknown }).allow === 'boolean') {
    const { allow, reason } = result as { allow: boolean, reason?: unknown }
    if (allow) return { ok: true, value: undefined }
    const why = typeof reason === 'string' && reason.length > 0 ? reason.slice(0, 500) : 'The host policy does not allow this call.'
    return { ok: false, reason: 'policy_denied', message: why }
  }
  return noDecision()
}

/** The `result` member of an OPA answer; undefined when the text is not a JSON object holding one. */
function resultOf (text: string): unknown {
  let doc: unknown
  try { doc = JSON.parse(text) } catch { return undefined }
  return typeof doc === 'object' && doc !== null ? (doc as { result?: unknown }).result : undefined
}

/** The body as text, or null once it passes `max` bytes (the rest is not read). */
async function readCapped (body: AsyncIterable<Buffer> & { destroy: () => void, on: (event: 'error', fn: () => void) => unknown }, max: number): Promise<string | null> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.length
    if (size > max) {
      // Destroying emits 'error'; unheard, it would be an uncaught exception.
      body.on('error', () => {})
      body.destroy()
      return null
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}
