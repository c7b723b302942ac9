import type { Tool } from '../tools/types.js'

/** Why preparation refused a call; the SPEC's `details.reason` codes. */
export type RejectionReason =
  | 'unknown_tool'
  | 'tool_not_allowed'
  | 'invalid_arguments'
  | 'conflict_key_unresolved'
  | 'policy_denied'
  | 'unauthorized'
  /** The provider marked the model response as cut short or filtered (SPEC section 11). */
  | 'incomplete_response'
  /** A provider call of a kind toolgate does not run (a Chat `custom` tool call): answered, never run. */
  | 'unsupported_call_type'

/** A call as the model wrote it. `arguments` is a JSON string or an object. */
export interface RawCall {
  id: string
  name: string
  arguments?: unknown
  /** Set by a provider format for a call of a kind toolgate does not run (`custom`): rejected `unsupported_call_type`. */
  kind?: string
  /** Set by a provider format when toolgate gave the call its id (it came without one): answered without an id. */
  generatedId?: true
}

/** What the final authorization stage knows about the caller and the run. */
export interface AuthorizationContext {
  runId: string
  tenant: string
  /** The run's allow-list of tool names, or null for every tool. */
  allowedTools: ReadonlySet<string> | null
  /** The caller key's scopes; '*' holds every scope. */
  scopes: ReadonlySet<string>
}

/** What the whole pipeline knows: the authorization context and the size limit of arguments. */
export interface PreparationContext extends AuthorizationContext {
  /** Largest arguments of one call, in bytes of JSON; larger ones are `invalid_arguments`. */
  maxArgumentBytes?: number
  /**
   * The calls' argument objects are the pipeline's to change (the engine's
   * come fresh from the request body): defaults and rewrites go in place
   * instead of into a clone. @default false
   */
  argumentsOwned?: boolean
  /**
   * Each call's raw arguments (`arguments ?? null`) as canonical text, by
   * position, when the caller has them: the size limit measures them
   * instead of serializing the arguments again (RFC 8785 text and
   * JSON.stringify's differ only in member order, never in length).
   */
  argumentTexts?: ReadonlyArray<{ readonly text: string }>
}

/** A stage either passes the call on or refuses it. */
export type StageResult<T> =
  | { ok: true, value: T }
  | { ok: false, reason: RejectionReason, message: string }

/** A call that passed every stage: its arguments are what the executor receives. */
export interface PreparedCall {
  readonly ok: true
  /** Position in the batch (source order). */
  readonly index: number
  readonly id: string
  /** The name the model used (may be an alias). */
  readonly requestedName: string
  readonly tool: Tool
  readonly arguments: Record<string, unknown>
  readonly conflictKey: string | null
}

/** A call refused by a stage. `arguments` is as far as preparation got. */
export interface RejectedCall {
  readonly ok: false
  readonly index: number
  readonly id: string
  readonly requestedName: string
  readonly tool: Tool | null
  readonly reason: RejectionReason
  /** Short, model-readable; never a stack trace. */
  readonly message: string
  /** Parsed arguments as far as preparation got, or the raw string if they did not parse. */
  readonly arguments: unknown
}

export type PreparationOutcome = PreparedCall | RejectedCall
