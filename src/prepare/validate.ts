/**
 * The validation stage (SPEC section 5, step 2): the tool's compiled schema,
 * which also fills schema defaults (Ajv `useDefaults`).
 */
import type { ErrorObject } from 'ajv'
import type { Tool, Validation } from '../model/tool.js'
import type { StageResult } from './types.js'

/** At most this many schema errors are named in a rejection message. */
const MAX_REPORTED_ERRORS = 5

export interface ValidateOptions {
  /**
   * The caller owns `args` and lets the validator fill defaults into it,
   * sparing a clone. Default false: `args` is cloned first.
   * @default false
   */
  readonly inPlace?: boolean
  /** Whose call it is (the tenant), for its turn on the validation thread. */
  readonly owner?: string
  /** The arguments' size as JSON, about, when known (their canonical text's length): the validator need not weigh them. */
  readonly bytes?: number | undefined
}

/** Describes schema errors as `instancePath message`, never with the values. */
export function describeErrors (errors: readonly ErrorObject[] | null | undefined): string {
  if (errors == null || errors.length === 0) return 'arguments do not match the schema'
  const parts: string[] = []
  for (const error of errors.slice(0, MAX_REPORTED_ERRORS)) {
    let part = `${error.instancePath === '' ? '/' : error.instancePath} ${error.message ?? 'is not valid'}`
    // The name of an unexpected key is the model's own words, not a value, and it is what the model must fix
    const extra = (error.params as { additionalProperty?: unknown }).additionalProperty
    if (error.keyword === 'additionalProperties' && typeof extra === 'string') {
      part += `: ${JSON.stringify(extra.slice(0, 64))}`
    }
    parts.push(part)
  }
  if (errors.length > MAX_REPORTED_ERRORS) parts.push(`and ${errors.length - MAX_REPORTED_ERRORS} more`)
  return parts.join('; ')
}

/**
 * Validates `args` against the tool's schema. On success the value holds
 * the schema's defaults; it is a clone unless `inPlace` is set, so the
 * caller's object is never mutated by accident. Answers at once, or as a
 * promise when the validation ran on the validation thread (a large or
 * costly call, src/tools/bounded-validate.ts).
 */
export function validateArguments (tool: Tool, args: Record<string, unknown>, options?: ValidateOptions): StageResult<Record<string, unknown>> | Promise<StageResult<Record<string, unknown>>> {
  const value = options?.inPlace === true ? args : structuredClone(args)
  const verdict = tool.validate(value, options?.bytes, options?.owner)
  return verdict instanceof Promise ? verdict.then(argumentsResult) : argumentsResult(verdict)
}

function argumentsResult (verdict: Validation): StageResult<Record<string, unknown>> {
  if (verdict.valid) return { ok: true, value: verdict.value as Record<string, unknown> }
  return { ok: false, reason: 'invalid_arguments', message: `invalid arguments: ${describeErrors(verdict.errors)}` }
}
