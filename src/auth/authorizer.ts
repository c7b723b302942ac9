import { Agent } from 'undici'
import type { ExternalAuthorizer } from '../prepare/authorize.js'

export interface AuthorizerOptions {
  url: string
  timeoutMs: number
}

/**
 * Final authorization by an external policy engine in Open Policy Agent's
 * data-API shape: POST {"input": {...}}, answer {"result": true|false} or
 * {"result": {"allow": bool, "reason": string}}. Anything else, a late
 * answer or a failure rejects the call (fail closed).
 */
export function createAuthorizer (opts: AuthorizerOptions): ExternalAuthorizer {
  const agent = new Agent({ keepAliveTimeout: 10_000, connect: { timeout: opts.timeoutMs } })
  const url = new URL(opts.url)
  return async (input) => {
    try {
      const res = await agent.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ input }),
        signal: AbortSignal.timeout(opts.timeoutMs)
      })
      const text = await res.body.text()
      if (res.statusCode !== 200) return { ok: false, reason: 'unauthorized', message: 'The authorizer could not decide; the call was not run.' }
      const result = (JSON.parse(text) as { result?: unknown }).result
      if (result === true) return { ok: true, value: undefined }
      if (result === false) return { ok: false, reason: 'policy_denied', message: 'The host policy does not allow this call.' }
      if (typeof result === 'object' && result !== null && typeof (result as { allow?: unknown }).allow === 'boolean') {
        const { allow, reason } = result as { allow: boolean, reason?: unknown }
        if (allow) return { ok: true, value: undefined }
        const why = typeof reason === 'string' && reason.length > 0 ? reason.slice(0, 500) : 'The host policy does not allow this call.'
        return { ok: false, reason: 'policy_denied', message: why }
      }
      return { ok: false, reason: 'unauthorized', message: 'The authorizer gave no decision; the call was not run.' }
    } catch {
      return { ok: false, reason: 'unauthorized', message: 'The authorizer could not be reached; the call was not run.' }
    }
  }
}
