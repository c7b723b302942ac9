import type { Projection, ProjectionCheck } from '../model/tool.js'
import { isPlainObject } from '../model/json.js'
import { compileExpression, describeJsonataError } from './projection-expression.js'
import { checkProjectedValue } from './projected-value.js'

export { MAX_PROJECTION_SEQUENCE, MAX_PROJECTION_STRING_CHARS } from './projection-expression.js'
export { checkProjectedValue }

/** Options of {@link compileProjection}. */
export interface ProjectionOptions {
  /**
   * Longest an evaluation may run before it fails, in milliseconds.
   * @default 100
   */
  timeoutMs?: number
  /**
   * Deepest nesting of JSONata evaluation steps before it fails.
   * @default 200
   */
  maxDepth?: number
}

/**
 * Default time box of one projection evaluation, in milliseconds. An
 * evaluation holds the event loop (its steps chain microtasks), so the box is
 * what one projection can take from every other request at worst.
 */
const DEFAULT_PROJECTION_TIMEOUT_MS = 100
/** Default evaluation depth limit of a projection. */
export const DEFAULT_PROJECTION_MAX_DEPTH = 200

/**
 * Compiles a JSONata projection once, at tool registration, with the
 * guardrails of ./projection-expression.ts. Throws an Error naming the
 * JSONata code, message and position when the expression does not parse
 * (the registry answers 400 `invalid_tool`).
 */
export function compileProjection (source: string, opts: ProjectionOptions = {}): Projection {
  if (typeof source !== 'string') {
    throw new TypeError(`Expected \`source\` to be a string, got ${typeof source}`)
  }
  const expression = compileExpression(source, {
    timeoutMs: positiveInteger(opts.timeoutMs ?? DEFAULT_PROJECTION_TIMEOUT_MS, 'timeoutMs'),
    maxDepth: positiveInteger(opts.maxDepth ?? DEFAULT_PROJECTION_MAX_DEPTH, 'maxDepth')
  })

  return Object.freeze({
    source,
    async evaluate (input: unknown): Promise<unknown> {
      try {
        // A copy, so nothing jsonata does to its input can reach a stored receipt.
        return await expression.evaluate(structuredClone(input))
      } catch (err) {
        // Only the code and position: jsonata's messages can quote values of
        // the receipt, and those may carry arguments that logs must not hold.
        throw new Error(`Projection evaluation failed: ${describeJsonataError(err, false)}`)
      }
    }
  })
}

function positiveInteger (value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`Expected \`${name}\` to be a positive integer, got ${String(value)}`)
  }
  return value
}

/**
 * Projects an action receipt for the model: evaluates the projection on
 * `{ intent, receipt }` and checks the value. `dispatch` and `timing` are
 * removed from the receipt here too, so a replay projects exactly as the
 * first dispatch did whatever the caller passes. Never rejects because of
 * the expression: an evaluation that throws, loops or runs too long gives
 * `{ ok: false, problem: 'threw' }`.
 */
export async function projectReceipt (
  projection: Projection,
  input: { intent: unknown, receipt: unknown },
  maxChars: number
): Promise<ProjectionCheck> {
  let value: unknown
  try {
    value = await projection.evaluate({ intent: input.intent, receipt: withoutReplayFields(input.receipt) })
  } catch {
    return { ok: false, problem: 'threw' }
  }
  return checkProjectedValue(value, maxChars)
}

function withoutReplayFields (receipt: unknown): unknown {
  if (!isPlainObject(receipt)) return receipt
  const { dispatch: _dispatch, timing: _timing, ...rest } = receipt
  return rest
}
