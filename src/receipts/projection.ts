import jsonata from 'jsonata'
import { LinearRegexEngine, compileLinear } from '../model/linear-regexp.js'
import type { Projection } from '../model/tool.js'
import { isPlainObject } from '../model/json.js'

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
 * Longest string and longest sequence any step of an evaluation may make.
 * The time box is checked between steps, so these bound what one step can
 * allocate (`$pad`, `&` doubling a string, the range operator): far above
 * any real receipt's projection, far below what would strain the process.
 */
export const MAX_PROJECTION_STRING_CHARS = 4 * 1024 * 1024
export const MAX_PROJECTION_SEQUENCE = 1_000_000

/** The outcome of projecting a receipt: the model's content, or why there is none. */
export type ProjectionCheck = { ok: true, content: string } | { ok: false, problem: string }

/**
 * Functions a projection may not call. `$now`, `$millis` and `$random` are the
 * SPEC's; `$shuffle` is random too, and a projection must give the same
 * content for the same receipt (a replay projects as the first dispatch did).
 */
const UNAVAILABLE_FUNCTIONS = ['now', 'millis', 'random', 'shuffle'] as const

/**
 * Compiles a JSONata projection once, at tool registration. Throws an Error
 * naming the JSONata code, message and position when the expression does not
 * parse (the registry answers 400 `invalid_tool`).
 *
 * Evaluation is guarded by jsonata's own per-evaluation guardrails (its
 * `timeout` and `stack` options, 2.1+), which check elapsed time and depth on
 * every evaluation step. They do the job of the `__evaluate_entry`/`exit`
 * hooks of jsonata-exerciser's `timeboxExpression`, but their counters live in
 * each evaluation's own frame, so concurrent evaluations of one compiled
 * expression do not share a depth count. A single built-in call on a huge
 * value is not interrupted mid-way; the next step then fails.
 */
export function compileProjection (source: string, opts: ProjectionOptions = {}): Projection {
  if (typeof source !== 'string') {
    throw new TypeError(`Expected \`source\` to be a string, got ${typeof source}`)
  }
  const timeoutMs = positiveInteger(opts.timeoutMs ?? DEFAULT_PROJECTION_TIMEOUT_MS, 'timeoutMs')
  const maxDepth = positiveInteger(opts.maxDepth ?? DEFAULT_PROJECTION_MAX_DEPTH, 'maxDepth')

  let expression: jsonata.Expression
  try {
    expression = jsonata(source, {
      timeout: timeoutMs,
      stack: maxDepth,
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

function positiveInteger (value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`Expected \`${name}\` to be a positive integer, got ${String(value)}`)
  }
  return value
}

// jsonata throws plain objects `{ code, position, token, message }`, not Errors.
function describeJsonataError (err: unknown, withMessage = true): string {
  const { code, position, message } = (typeof err === 'object' && err !== null ? err : {}) as {
    code?: unknown, position?: unknown, message?: unknown
  }
  const parts: string[] = []
  if (typeof code === 'string') parts.push(code)
  if (withMessage && typeof message === 'string') parts.push(message)
  if (typeof position === 'number') parts.push(`at position ${position}`)
  return parts.length > 0 ? parts.join(' ') : (err instanceof Error ? err.name : 'unknown error')
}

/**
 * Whether a projection's value may become the model's content (SPEC section 7):
 * a plain JSON object holding only JSON values at every depth, whose
 * `JSON.stringify` is at most `maxChars` UTF-16 units long. `problem` is an
 * internal code for logs and metrics (`not_an_object`, `not_json`,
 * `too_long`), never the value.
 */
export function checkProjectedValue (value: unknown, maxChars: number): ProjectionCheck {
  if (!Number.isSafeInteger(maxChars) || maxChars < 0) {
    throw new TypeError(`Expected \`maxChars\` to be a non-negative integer, got ${String(maxChars)}`)
  }
  if (!isPlainObject(value) || isJsonataFunction(value)) return { ok: false, problem: 'not_an_object' }
  const problem = findProblem(value, maxChars)
  if (problem !== null) return { ok: false, problem }
  const content = JSON.stringify(value)
  if (content.length > maxChars) return { ok: false, problem: 'too_long' }
  return { ok: true, content }
}


// jsonata lambdas and function references are plain objects marked `_jsonata_*`
// (and jsonata refuses such keys in the objects a projection builds).
function isJsonataFunction (value: Record<string, unknown>): boolean {
  return Object.keys(value).some(key => key.startsWith('_jsonata_'))
}

/**
 * Walks the value without recursion (no stack overflow on deep values) and
 * keeps a lower bound of its serialized length, so a huge value, or one
 * whose shared references expand to a huge tree, is refused as `too_long`
 * before anything stringifies it. Shared references are fine (jsonata reuses
 * input objects); only a cycle is `not_json`.
 */
function findProblem (root: Record<string, unknown>, maxChars: number): 'not_json' | 'too_long' | null {
  const pending: Array<{ value: unknown } | { leave: object }> = [{ value: root }]
  const ancestors = new Set<object>()
  let minLength = 0
  while (pending.length > 0) {
    const entry = pending.pop() as { value: unknown } | { leave: object }
    if ('leave' in entry) {
      ancestors.delete(entry.leave)
      continue
    }
    const { value } = entry
    switch (typeof value) {
      case 'string':
        minLength += value.length + 2
        break
      case 'boolean':
        minLength += value ? 4 : 5
        break
      case 'number':
        if (!Number.isFinite(value)) return 'not_json'
        minLength += 1
        break
      case 'object': {
        if (value === null) {
          minLength += 4
          break
        }
        if (ancestors.has(value)) return 'not_json'
        ancestors.add(value)
        pending.push({ leave: value })
        if (Array.isArray(value)) {
          minLength += 2 + Math.max(0, value.length - 1)
          // Indexed loop, so holes show up as undefined and are refused.
          for (let i = 0; i < value.length; i++) pending.push({ value: value[i] })
        } else if (isPlainObject(value)) {
          if (isJsonataFunction(value)) return 'not_json'
          const keys = Object.keys(value)
          minLength += 2 + Math.max(0, keys.length - 1)
          for (const key of keys) {
            minLength += key.length + 3
            pending.push({ value: value[key] })
          }
        } else {
          return 'not_json'
        }
        break
      }
      default:
        // undefined, function, symbol, bigint
        return 'not_json'
    }
    if (minLength > maxChars) return 'too_long'
  }
  return null
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
