/** A tool call as the model wrote it and as preparation leaves it: the vocabulary every layer above shares. */
import type { Tool } from './tool.js'

/** Why preparation refused a call; the SPEC's `details.reason` codes, each a code of the catalogue (`CALL_ERRORS`, src/errors.ts: `rejectedResult` hands it to `errorContent`, which takes only those). */
export type RejectionReason =
  | 'unknown_tool'
  /** An MCP tool whose definition changed since it was pinned, or new to a pinned server (SPEC §18). */
  | 'tool_quarantined'
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
  /** Set on the copy handed to the executor when the call holds its tenant-scoped key (SPEC section 17). */
  readonly fencingToken?: string
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
