import { Agent } from 'undici'
import { isObject } from '../model/json.js'
import type { Outcome } from './types.js'

/** What one question to a status URL gave. */
export type StatusAnswer =
  | { kind: 'resolved', outcome: Outcome }
  /** The executor does not know (yet): the uncertainty stays open. */
  | { kind: 'unknown' }
  /** No usable answer (refused, timed out, 5xx, unreadable): asked again later. */
  | { kind: 'error', cause: string }

/** Status answers are small; anything larger is not a status answer. */
const MAX_STATUS_BYTES = 64 * 1024
const RESOLVING = new Set(['committed', 'rejected', 'failed'])

/**
 * Asks executors' status URLs `GET statusUrl?operationId=<id>` (SPEC
 * section 14). One Agent for the process; redirects are not followed.
 */
export class StatusClient {
  readonly #agent = new Agent({ connections: 16, keepAliveTimeout: 10_000 })

  async ask (statusUrl: string, operationId: string, timeoutMs: number): Promise<StatusAnswer> {
    const url = new URL(statusUrl)
    url.searchParams.set('operationId', operationId)
    const signal = AbortSignal.timeout(timeoutMs)
    let text: string
    try {
      const res = await this.#agent.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'GET',
        headers: { accept: 'application/json' },
        signal,
        // The signal is the one deadline; undici's coarse timers could fire before it.
        headersTimeout: 0,
        bodyTimeout: 0
      })
      if (res.statusCode < 200 || res.statusCode >= 300) {
        await res.body.dump()
        return { kind: 'error', cause: `http_${res.statusCode}` }
      }
      let size = 0
      const chunks: Buffer[] = []
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length
        if (size > MAX_STATUS_BYTES) {
          res.body.destroy()
          return { kind: 'error', cause: 'answer_too_large' }
        }
        chunks.push(chunk as Buffer)
      }
      text = Buffer.concat(chunks).toString('utf8')
    } catch (err) {
      return { kind: 'error', cause: signal.aborted ? 'timeout' : String((err as { code?: string }).code ?? 'request_failed') }
    }
    return interpretStatus(text)
  }

  async close (): Promise<void> {
    await this.#agent.close()
  }
}

/** `{"status": "committed" | "rejected" | "failed" | "unknown", "result"?, "stateRevision"?}`; anything else is an error. */
export function interpretStatus (text: string): StatusAnswer {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return { kind: 'error', cause: 'unreadable_answer' }
  }
  if (!isObject(body)) return { kind: 'error', cause: 'unreadable_answer' }
  if (body.status === 'unknown') return { kind: 'unknown' }
  if (typeof body.status !== 'string' || !RESOLVING.has(body.status)) return { kind: 'error', cause: 'unreadable_answer' }
  if (body.result !== undefined && !isObject(body.result)) return { kind: 'error', cause: 'unreadable_answer' }
  const rev = body.stateRevision
  if (rev !== undefined && rev !== null && typeof rev !== 'string' && !(typeof rev === 'number' && Number.isFinite(rev))) {
    return { kind: 'error', cause: 'unreadable_answer' }
  }
  const outcome: Outcome = { status: body.status as Outcome['status'] }
  if (body.result !== undefined) outcome.result = body.result as Record<string, unknown>
  if (rev !== undefined && rev !== null) outcome.stateRevision = rev as string | number
  return { kind: 'resolved', outcome }
}
