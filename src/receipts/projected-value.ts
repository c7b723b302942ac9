/**
 * The check of a projection's value (SPEC section 7): what may become the
 * model's content. Made where the value is, in the worker that evaluated
 * it, so only the content (at most `maxChars` characters) comes back to the
 * service's thread, never a huge value.
 */
import { isPlainObject } from '../model/json.js'
import type { ProjectionCheck } from '../model/tool.js'

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
