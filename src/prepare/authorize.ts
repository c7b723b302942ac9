/**
 * Final authorization (SPEC section 5, step 4), its synchronous part: the
 * run's allow-list and the tool's required scopes. The external decision is
 * a seam, {@link ExternalAuthorizer}, implemented elsewhere.
 */
import type { Tool } from '../model/tool.js'
import type { AuthorizationContext, StageResult } from './types.js'

/**
 * An external authorization decision for one prepared call (SPEC section 5:
 * an Open Policy Agent style service). It receives the arguments, so it must
 * never log them, and must not mutate them. A rejected promise denies the
 * call (fail closed).
 */
export type ExternalAuthorizer = (input: {
  runId: string
  tenant: string
  tool: string
  callId: string
  arguments: Record<string, unknown>
}) => Promise<StageResult<void>>

const ALLOWED: StageResult<void> = Object.freeze({ ok: true, value: undefined })

/**
 * Checks the run's allow-list (canonical tool names; null allows every tool)
 * and then that the caller's scopes hold every scope the tool requires ('*'
 * holds them all).
 */
export function authorizeLocally (tool: Tool, ctx: AuthorizationContext): StageResult<void> {
  if (ctx.allowedTools !== null && !ctx.allowedTools.has(tool.name)) {
    return { ok: false, reason: 'tool_not_allowed', message: `the tool ${JSON.stringify(tool.name)} is not allowed in this run` }
  }
  if (tool.requiredScopes.length === 0 || ctx.scopes.has('*')) return ALLOWED
  const missing = tool.requiredScopes.filter((scope) => !ctx.scopes.has(scope))
  if (missing.length === 0) return ALLOWED
  return {
    ok: false,
    reason: 'unauthorized',
    message: `the caller lacks the scope${missing.length === 1 ? '' : 's'} the tool ${JSON.stringify(tool.name)} requires: ${missing.join(', ')}`
  }
}
