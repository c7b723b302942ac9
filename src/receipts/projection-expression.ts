/**
 * A projection's JSONata expression with its guardrails: compiled in the
 * service's thread at tool registration (a syntax error or a regex literal
 * RE2 cannot match is refused there) and again, once per worker, where it
 * is evaluated (./projection-worker.ts).
 */
import jsonata from 'jsonata'
import { LinearRegexEngine, compileLinear } from '../model/linear-regexp.js'

/** What bounds one evaluation besides the step sizes below. */
export interface ProjectionLimits {
  /** Longest an evaluation may run, in milliseconds. */
  readonly timeoutMs: number
  /** Deepest nesting of JSONata evaluation steps. */
  readonly maxDepth: number
}

/**
 * Longest string and longest sequence any step of an evaluation may make.
 * The time box is checked between steps, so these bound what one step can
 * allocate (`$pad`, `&` doubling a string, the range operator): far above
 * any real receipt's projection, far below what would strain the process.
 */
export const MAX_PROJECTION_STRING_CHARS = 4 * 1024 * 1024
export const MAX_PROJECTION_SEQUENCE = 1_000_000

/**
 * Functions a projection may not call. `$now`, `$millis` and `$random` are the
 * SPEC's; `$shuffle` is random too, and a projection must give the same
 * content for the same receipt (a replay projects as the first dispatch did).
 */
const UNAVAILABLE_FUNCTIONS = ['now', 'millis', 'random', 'shuffle'] as const

/**
 * Compiles a JSONata projection with its guardrails. Throws an Error naming
 * the JSONata code, message and position when the expression does not parse.
 *
 * Evaluation is guarded by jsonata's own per-evaluation guardrails (its
 * `timeout` and `stack` options, 2.1+), which check elapsed time and depth on
 * every evaluation step. They do the job of the `__evaluate_entry`/`exit`
 * hooks of jsonata-exerciser's `timeboxExpression`, but their counters live in
 * each evaluation's own frame, so concurrent evaluations of one compiled
 * expression do not share a depth count. A single built-in call on a huge
 * value is not interrupted mid-way by them: that is what the worker's
 * deadline and memory limit are for (./projection-pool.ts).
 */
export function compileExpression (source: string, limits: ProjectionLimits): jsonata.Expression {
  let expression: jsonata.Expression
  try {
    expression = jsonata(source, {
      timeout: limits.timeoutMs,
      stack: limits.maxDepth,
      sequence: MAX_PROJECTION_SEQUENCE,
      // Regex literals ($match, $replace, $split, $contains) match in linear time.
      RegexEngine: LinearRegexEngine as unknown as RegExpConstructor
    })
  } catch (err) {
    throw new Error(`Invalid projection: ${describeJsonataError(err)}`)
  }
  // Refused now rather than failing every dispatch: a literal RE2 cannot match in linear time.
  for (const regex of regexLiterals(expression.ast())) {
    try { compileLinear(regex.source, regex.flags) } catch (err) { throw new Error(`Invalid projection: ${(err as Error).message}`) }
  }
  expression.assign(EVALUATE_EXIT as unknown as string, boundStepResult)
  expression.registerFunction('pad', boundedPad, '<s-ns?:s>')
  for (const name of UNAVAILABLE_FUNCTIONS) {
    // Bound on the expression's own frame, which shadows jsonata's built-ins,
    // so `$eval("$now()")` is refused as well.
    expression.registerFunction(name, () => {
      throw Object.assign(new Error(`$${name} is unavailable in projections`), { code: 'unavailable_function' })
    })
  }
  return expression
}

/** jsonata's hook, called with each evaluation step's result. */
const EVALUATE_EXIT = Symbol.for('jsonata.__evaluate_exit')

function tooLarge (what: string): Error {
  return Object.assign(new Error(`a projection step made ${what} larger than the limit`), { code: 'too_large' })
}

/**
 * Fails the evaluation at the first step whose result is an oversized string
 * or array (jsonata's own `sequence` option bounds only its sequences, not the
 * arrays built-ins such as `$split` return).
 */
function boundStepResult (_expr: unknown, _input: unknown, _env: unknown, result: unknown): void {
  if (typeof result === 'string' && result.length > MAX_PROJECTION_STRING_CHARS) throw tooLarge('a string')
  if (Array.isArray(result) && result.length > MAX_PROJECTION_SEQUENCE) throw tooLarge('an array')
}

/**
 * `$pad` as jsonata defines it (width in code points, negative pads on the
 * left, the padding string repeated and cut), refusing a width that would
 * make a string past the limit before making it: the step hook would only
 * see it once it existed.
 */
function boundedPad (str: string | undefined, width: number, char?: string): string | undefined {
  if (str === undefined) return undefined
  const fill = char === undefined || char.length === 0 ? ' ' : char
  const w = Math.trunc(width)
  if (!Number.isFinite(w) || Math.abs(w) > MAX_PROJECTION_STRING_CHARS) throw tooLarge('a padded string')
  const codePoints = Array.from(str).length
  const padLength = Math.abs(w) - codePoints
  if (padLength <= 0) return str
  const fillPoints = Array.from(fill)
  const padding = fillPoints.length === 1 ? fill.repeat(padLength) : Array.from(fill.repeat(Math.ceil(padLength / fillPoints.length))).slice(0, padLength).join('')
  return w > 0 ? str + padding : padding + str
}

/** Every regex literal of a parsed expression. */
function regexLiterals (ast: unknown): RegExp[] {
  const found: RegExp[] = []
  const pending: unknown[] = [ast]
  const seen = new Set<object>()
  while (pending.length > 0) {
    const node = pending.pop()
    if (node === null || typeof node !== 'object' || seen.has(node)) continue
    seen.add(node)
    if (node instanceof RegExp) {
      found.push(node)
      continue
    }
    for (const value of Object.values(node)) pending.push(value)
  }
  return found
}

/**
 * An error's code, message and position, as jsonata throws them: plain
 * objects `{ code, position, token, message }`, not Errors. Without the
 * message for an evaluation error: jsonata's messages can quote values of
 * the receipt, and those may carry arguments that logs must not hold.
 */
export function describeJsonataError (err: unknown, withMessage = true): string {
  const { code, position, message } = (typeof err === 'object' && err !== null ? err : {}) as {
    code?: unknown, position?: unknown, message?: unknown
  }
  const parts: string[] = []
  if (typeof code === 'string') parts.push(code)
  if (withMessage && typeof message === 'string') parts.push(message)
  if (typeof position === 'number') parts.push(`at position ${position}`)
  return parts.length > 0 ? parts.join(' ') : (err instanceof Error ? err.name : 'unknown error')
}
