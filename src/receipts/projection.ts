import type { Projection, ProjectionCheck } from '../model/tool.js'
import { isPlainObject } from '../model/json.js'
import { compileExpression } from './projection-expression.js'
import { ProjectionPool } from './projection-pool.js'

export { MAX_PROJECTION_SEQUENCE, MAX_PROJECTION_STRING_CHARS } from './projection-expression.js'
export { checkProjectedValue } from './projected-value.js'

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
  /**
   * Where the projection is evaluated: the app's pool (src/services.ts).
   * @default the process's own pool, started when first used
   */
  pool?: ProjectionPool
}

/**
 * Default time box of one projection evaluation, in milliseconds: how long
 * a tool's projection may hold a worker of the pool, and its batch.
 */
const DEFAULT_PROJECTION_TIMEOUT_MS = 100
/** Default evaluation depth limit of a projection. */
export const DEFAULT_PROJECTION_MAX_DEPTH = 200

/** The pool of projections compiled without one: tests, and registries made outside an app. */
let processPool: ProjectionPool | undefined

/**
 * Compiles a JSONata projection at tool registration, in this thread, to
 * refuse it at once: throws an Error naming the JSONata code, message and
 * position when the expression does not parse, or naming a regex literal
 * RE2 cannot match in linear time (the registry answers 400
 * `invalid_tool`). It is evaluated on a worker of the pool
 * (./projection-pool.ts), which compiles it again once.
 */
export function compileProjection (source: string, opts: ProjectionOptions = {}): Projection {
  if (typeof source !== 'string') {
    throw new TypeError(`Expected \`source\` to be a string, got ${typeof source}`)
  }
  const limits = {
    timeoutMs: positiveInteger(opts.timeoutMs ?? DEFAULT_PROJECTION_TIMEOUT_MS, 'timeoutMs'),
    maxDepth: positiveInteger(opts.maxDepth ?? DEFAULT_PROJECTION_MAX_DEPTH, 'maxDepth')
  }
  compileExpression(source, limits)
  const pool = opts.pool

  return Object.freeze({
    source,
    async evaluate (input: unknown, maxChars: number, owner?: string): Promise<ProjectionCheck> {
      // The worker gets a copy, so nothing jsonata does to its input can reach a stored receipt.
      return await (pool ?? (processPool ??= new ProjectionPool())).run({ source, limits, input, maxChars }, owner)
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
 * the expression: an evaluation that throws, loops, runs too long or out of
 * its worker's memory gives `{ ok: false, problem: 'threw' }`.
 */
export async function projectReceipt (
  projection: Projection,
  input: { intent: unknown, receipt: unknown },
  maxChars: number,
  owner?: string
): Promise<ProjectionCheck> {
  if (!Number.isSafeInteger(maxChars) || maxChars < 0) {
    throw new TypeError(`Expected \`maxChars\` to be a non-negative integer, got ${String(maxChars)}`)
  }
  try {
    return await projection.evaluate({ intent: input.intent, receipt: withoutReplayFields(input.receipt) }, maxChars, owner)
  } catch {
    return { ok: false, problem: 'threw' }
  }
}

function withoutReplayFields (receipt: unknown): unknown {
  if (!isPlainObject(receipt)) return receipt
  const { dispatch: _dispatch, timing: _timing, ...rest } = receipt
  return rest
}
