import type { ErrorObject } from 'ajv'
import type { Executor } from '../dispatch/executor.js'

/** What one validation answered: valid, with the data as validated (schema defaults filled in), or the errors why not. */
export type Validation = { readonly valid: true, readonly value: unknown } | { readonly valid: false, readonly errors: ErrorObject[] }

/**
 * Validates data and fills schema defaults; at once when that is cheap, else
 * on the validation thread (src/tools/bounded-validate.ts), where `owner`
 * (the tenant whose call it is, or whose call an MCP answer answers)
 * waits its turn among the others. `bytes`: the data's size as JSON, about,
 * when the caller knows it (it is not weighed).
 */
export type BoundedValidate = (data: unknown, bytes?: number, owner?: string) => Validation | Promise<Validation>

/** How a tool asks to be scheduled: see SPEC section 5, "Epochs". */
export type ExecutionHint = 'auto' | 'parallel' | 'sequential'

/** One host policy rule, applied after validation, in order. */
export type RewriteRule =
  | { op: 'set', path: string, value: unknown }
  | { op: 'default', path: string, value: unknown }
  | { op: 'remove', path: string }
  | { op: 'clamp', path: string, min?: number, max?: number }

/** A tool definition as an admin or the tools file writes it (SPEC section 2). */
export interface ToolDefinition {
  name: string
  description?: string
  inputSchema: Record<string, unknown>
  executor: { url: string, timeoutMs?: number, maxTimeoutMs?: number, statusUrl?: string }
  readOnly?: boolean
  /** The executor applies a call once per Idempotency-Key: a retry of an uncertain write may be sent under the original key. */
  idempotent?: boolean
  execution?: ExecutionHint
  conflictKey?: string
  /** `tenant`: the conflict key is a resource of the whole tenant (SPEC section 17). @default 'run' */
  conflictScope?: ConflictScope
  /** How long a call waits for its tenant-scoped key. @default 30000 */
  conflictWaitMs?: number
  trackExactRepeats?: boolean
  /** JSON pointers of members left out of the fingerprint (SPEC section 15), e.g. a request id. */
  ignoreArguments?: string[]
  aliases?: string[]
  argumentAliases?: Record<string, string>
  rewrite?: RewriteRule[]
  requiredScopes?: string[]
  action?: { projection?: string, maxModelReceiptChars?: number }
  requiresApproval?: boolean
}

/** Where a conflict key keeps calls apart: inside a batch (`run`) or across every run of the tenant (`tenant`). */
export type ConflictScope = 'run' | 'tenant'

/** One piece of a compiled conflict-key template: literal text or a JSON pointer. */
export type ConflictKeyPart = { literal: string } | { pointer: string[] }

/**
 * A tool after registration: every default filled in, the schema compiled
 * once, the conflict-key template and the projection parsed once.
 */
export interface Tool {
  readonly name: string
  readonly description: string
  readonly inputSchema: Record<string, unknown>
  /** `via`: the executor of an imported tool (an MCP server's); absent for toolgate's HTTP executor protocol. */
  readonly executor: { readonly url: string, readonly timeoutMs: number, readonly maxTimeoutMs?: number, readonly via?: Executor, readonly statusUrl?: string | null }
  readonly readOnly: boolean
  /** Retries of its uncertain writes go out under the original operation id (SPEC section 14). */
  readonly idempotent: boolean
  readonly execution: ExecutionHint
  readonly conflictKey: readonly ConflictKeyPart[] | null
  /** `tenant` only with a conflict key: its calls take the key in the store before they are sent. */
  readonly conflictScope: ConflictScope
  readonly conflictWaitMs: number
  readonly trackExactRepeats: boolean
  /** `ignoreArguments`, parsed into reference tokens; empty or absent when the tool ignores nothing. */
  readonly ignoreArguments?: ReadonlyArray<readonly string[]>
  readonly aliases: readonly string[]
  readonly argumentAliases: Readonly<Record<string, string>>
  readonly rewrite: readonly RewriteRule[]
  readonly requiredScopes: readonly string[]
  readonly action: { readonly projection: Projection | null, readonly maxModelReceiptChars: number } | null
  /** A person approves each call before it runs (SPEC section 13). */
  readonly requiresApproval: boolean
  /** Validates and fills schema defaults (Ajv `useDefaults`): in place and at once when cheap, else on the validation thread, answering a filled copy. */
  readonly validate: BoundedValidate
  /**
   * Whether preparing a call may change its argument object in place: host
   * rewrites, or a schema with a `default` somewhere (Ajv fills it in) or a
   * reference that could lead to one. When false, prepared arguments that
   * are still the request's own object are exactly what came in.
   */
  readonly preparesInPlace: boolean
  /** The definition with every default filled in, as GET /v1/tools answers it. */
  readonly definition: Required<Omit<ToolDefinition, 'action' | 'conflictKey' | 'ignoreArguments'>> & Pick<ToolDefinition, 'action' | 'conflictKey' | 'ignoreArguments'>
}

/** The outcome of projecting a receipt: the model's content, or why there is none. */
export type ProjectionCheck = { ok: true, content: string } | { ok: false, problem: string }

/** A compiled JSONata projection of an action receipt (SPEC section 7). */
export interface Projection {
  readonly source: string
  /**
   * Evaluates the expression apart from the event loop and checks its value
   * against `maxChars` (the model's content, or the problem with it); rejects
   * when it throws, loops, runs too long or out of memory. `owner` (the
   * tenant whose call it is) waits its turn for a worker among the others.
   */
  evaluate (input: unknown, maxChars: number, owner?: string): Promise<ProjectionCheck>
}

/** Looks tools up by name or alias. */
export interface ToolLookup {
  resolve (nameOrAlias: string): Tool | undefined
  /** Whether the name is an MCP tool held in quarantine (SPEC §18): not offered, its calls rejected. */
  quarantined? (name: string): boolean
  /**
   * Whether a quarantined name is still held once its server's pins were
   * read from the store again (an admin may have approved it on another
   * replica): asked before a call to it is rejected.
   */
  stillQuarantined? (name: string): Promise<boolean>
}
