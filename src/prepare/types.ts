import type { RejectionReason } from '../model/call.js'

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
