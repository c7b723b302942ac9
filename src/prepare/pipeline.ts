/**
 * The preparation pipeline (SPEC section 5): every stage, in order, for each
 * call of a batch. A call that fails a stage is rejected and the others go on.
 */
import type { Tool, ToolLookup, Validation } from '../model/tool.js'
import { authorizeLocally, type ExternalAuthorizer } from './authorize.js'
import { coerceScalars, parseArguments, renameArgumentAliases, resolveTool } from './compat.js'
import { resolveConflictKey } from './conflict-key.js'
import { applyRewrites, RewriteError } from './rewrite.js'
import type { AuthorizationContext, PreparationContext, StageResult } from './types.js'
import type { PreparationOutcome, PreparedCall, RawCall, RejectedCall, RejectionReason } from '../model/call.js'
import { describeErrors, validateArguments } from './validate.js'
import { inSlices } from '../model/slices.js'

/** A call that passed every stage up to the external authorizer. */
type LocallyAuthorized = Omit<PreparedCall, 'conflictKey'>

const REASONS: ReadonlySet<string> = new Set<RejectionReason>([
  'unknown_tool', 'tool_not_allowed', 'invalid_arguments', 'conflict_key_unresolved', 'policy_denied', 'unauthorized'
])

function rejected (call: RawCall, index: number, tool: Tool | null, reason: RejectionReason, message: string, args: unknown): RejectedCall {
  return { ok: false, index, id: call.id, requestedName: call.name, tool, reason, message, arguments: args }
}

/** Every stage but the external authorizer and the conflict key; a promise when validation ran on the validation thread. */
function prepareLocally (call: RawCall, index: number, lookup: ToolLookup, ctx: PreparationContext): Local | Promise<Local> {
  if (call.kind !== undefined) {
    return rejected(call, index, null, 'unsupported_call_type', `this is a ${call.kind} tool call, which toolgate does not run; call the tool as a function instead`, call.arguments)
  }
  const resolved = resolveTool(call.name, lookup)
  if (!resolved.ok) {
    if (resolved.reason === 'tool_quarantined' && lookup.stillQuarantined !== undefined) return requarantined(call, index, lookup, ctx)
    return rejected(call, index, null, resolved.reason, resolved.message, call.arguments)
  }
  const tool = resolved.value
  const text = ctx.argumentTexts?.[index]?.text
  if (ctx.maxArgumentBytes !== undefined && argumentBytes(call.arguments, text) > ctx.maxArgumentBytes) {
    return rejected(call, index, tool, 'invalid_arguments', `the arguments are larger than ${ctx.maxArgumentBytes} bytes`, null)
  }

  const parsed = parseArguments(call.arguments)
  if (!parsed.ok) return rejected(call, index, tool, parsed.reason, parsed.message, call.arguments)
  // What a string parsed into is ours to fill defaults into; an object is the caller's and gets cloned, unless the caller gave it up
  const owned = ctx.argumentsOwned === true || call.arguments === undefined || call.arguments === null || typeof call.arguments === 'string'
  const args = coerceScalars(renameArgumentAliases(parsed.value, tool.argumentAliases), tool.inputSchema)

  const valid = validateArguments(tool, args, { inPlace: owned, bytes: text?.length, owner: ctx.tenant })
  return valid instanceof Promise ? valid.then((v) => validated(call, index, tool, args, v, ctx)) : validated(call, index, tool, args, valid, ctx)
}

type Local = RejectedCall | LocallyAuthorized

/**
 * A call to a quarantined tool (a rare path): its server's pins are read
 * again first, so that an approval made on another replica, and not heard
 * of yet, is honoured; then the call is prepared once more, without another
 * reading (rejected if the tool is still held).
 */
async function requarantined (call: RawCall, index: number, lookup: ToolLookup, ctx: PreparationContext): Promise<Local> {
  await lookup.stillQuarantined!(call.name as string).catch(() => true)
  const once: ToolLookup = { resolve: (name) => lookup.resolve(name), quarantined: (name) => lookup.quarantined?.(name) === true }
  return await prepareLocally(call, index, once, ctx)
}

/** The stages after validation: host policy rewrites (validated again), allow-list and scopes. */
function validated (call: RawCall, index: number, tool: Tool, given: Record<string, unknown>, valid: StageResult<Record<string, unknown>>, ctx: PreparationContext): Local | Promise<Local> {
  if (!valid.ok) return rejected(call, index, tool, valid.reason, valid.message, given)
  let args = valid.value
  if (tool.rewrite.length === 0) return authorizedLocally(call, index, tool, args, ctx)
  // Validation left args ours: parsed from a string, or cloned from the caller's object
  try {
    args = applyRewrites(args, tool.rewrite, { inPlace: true })
  } catch (err) {
    const detail = err instanceof RewriteError ? `: ${err.message}` : ''
    return rejected(call, index, tool, 'policy_denied', `the host policy could not be applied${detail}`, args)
  }
  const rewritten = args
  const again = (verdict: Validation): Local => verdict.valid
    ? authorizedLocally(call, index, tool, verdict.value as Record<string, unknown>, ctx)
    : rejected(call, index, tool, 'policy_denied', `the host policy rewrite produced invalid arguments: ${describeErrors(verdict.errors)}`, rewritten)
  const verdict = tool.validate(args, undefined, ctx.tenant)
  return verdict instanceof Promise ? verdict.then(again) : again(verdict)
}

function authorizedLocally (call: RawCall, index: number, tool: Tool, args: Record<string, unknown>, ctx: PreparationContext): Local {
  const auth = authorizeLocally(tool, ctx)
  if (!auth.ok) return rejected(call, index, tool, auth.reason, auth.message, args)
  return { ok: true, index, id: call.id, requestedName: call.name, tool, arguments: args }
}

/** Bytes of the arguments as JSON; a string is measured as sent, an object by its JSON text (`text`, when known). */
function argumentBytes (raw: unknown, text: string | undefined): number {
  if (raw === undefined || raw === null) return 0
  if (typeof raw === 'string') return Buffer.byteLength(raw)
  return Buffer.byteLength(text ?? JSON.stringify(raw) ?? '')
}

function withConflictKey (call: RawCall, local: LocallyAuthorized): PreparationOutcome {
  const parts = local.tool.conflictKey
  let conflictKey: string | null = null
  if (parts !== null) {
    const key = resolveConflictKey(parts, local.arguments)
    if (!key.ok) return rejected(call, local.index, local.tool, key.reason, key.message, local.arguments)
    conflictKey = key.value
  }
  // Spelled out rather than spread: this runs on every call and spreading is markedly slower
  const { index, id, requestedName, tool, arguments: args } = local
  return { ok: true, index, id, requestedName, tool, arguments: args, conflictKey }
}

async function authorizeExternally (
  call: RawCall, local: LocallyAuthorized, ctx: AuthorizationContext, authorizer: ExternalAuthorizer
): Promise<PreparationOutcome> {
  let decision: unknown
  try {
    decision = await authorizer({ runId: ctx.runId, tenant: ctx.tenant, tool: local.tool.name, callId: local.id, arguments: local.arguments })
  } catch {
    // Fail closed: no answer is no permission
    return rejected(call, local.index, local.tool, 'unauthorized', 'the authorization service could not decide on this call', local.arguments)
  }
  const d = (decision !== null && typeof decision === 'object' ? decision : {}) as { ok?: unknown, reason?: unknown, message?: unknown }
  if (d.ok === true) return withConflictKey(call, local)
  const reason = typeof d.reason === 'string' && REASONS.has(d.reason) ? d.reason as RejectionReason : 'unauthorized'
  const message = typeof d.message === 'string' && d.message !== '' ? d.message : 'the authorization service denied this call'
  return rejected(call, local.index, local.tool, reason, message, local.arguments)
}

/**
 * Prepares one call through every stage except the external authorizer:
 * tool, arguments, aliases, coercion, validation with defaults, host policy
 * rewrites and validation again, allow-list and scopes, conflict key.
 * `index` is the call's position in its batch.
 */
export function prepareCall (call: RawCall, index: number, lookup: ToolLookup, ctx: PreparationContext): PreparationOutcome | Promise<PreparationOutcome> {
  const local = prepareLocally(call, index, lookup, ctx)
  if (local instanceof Promise) return local.then((l) => l.ok ? withConflictKey(call, l) : l)
  return local.ok ? withConflictKey(call, local) : local
}

/**
 * Prepares every call of a batch: one outcome per call, in source order. With
 * an external authorizer, its decisions for all the calls that reach it are
 * awaited concurrently; a decision that rejects denies the call. Without
 * one, a batch that never yields answers its outcomes at once.
 */
export function prepareBatch (
  calls: readonly RawCall[], lookup: ToolLookup, ctx: PreparationContext, authorizer?: ExternalAuthorizer
): PreparationOutcome[] | Promise<PreparationOutcome[]> {
  if (authorizer === undefined) return settled(inSlices(calls, (call, index) => prepareCall(call, index, lookup, ctx)))
  return authorized(calls, lookup, ctx, authorizer)
}

/** The outcomes once those validated on the validation thread are in: at once when none was. */
function settled<T> (out: Array<T | Promise<T>> | Promise<Array<T | Promise<T>>>): T[] | Promise<T[]> {
  if (out instanceof Promise) return out.then(async (all) => await Promise.all(all))
  return out.some((o) => o instanceof Promise) ? Promise.all(out) : out as T[]
}

async function authorized (calls: readonly RawCall[], lookup: ToolLookup, ctx: PreparationContext, authorizer: ExternalAuthorizer): Promise<PreparationOutcome[]> {
  const locals = await settled(inSlices(calls, (call, index) => prepareLocally(call, index, lookup, ctx)))
  return await Promise.all(locals.map((local, index) =>
    local.ok ? authorizeExternally(calls[index] as RawCall, local, ctx, authorizer) : local))
}
