/**
 * Host policy rewriting (SPEC section 2, `rewrite`; section 5, step 3): the
 * tool's rules, applied in order to a copy of the validated arguments.
 */
import type { RewriteRule } from '../model/tool.js'
import { defineOwn } from './compat.js'
import { arrayIndex, formatPointer, parsePointer } from '../model/json-pointer.js'

type Args = Record<string, unknown>
type Container = Args | unknown[]

/**
 * A rule that cannot be enforced: a `set` whose path is blocked by a value
 * that is not an object, a path that is not a JSON pointer, or the root. The
 * pipeline turns it into `policy_denied`: a policy is never silently skipped.
 */
export class RewriteError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'RewriteError'
  }
}

function isContainer (value: unknown): value is Container {
  return value !== null && typeof value === 'object'
}

function cloneValue (value: unknown): unknown {
  // The rule's value belongs to the tool definition: a later stage filling
  // schema defaults in place must not reach it
  return isContainer(value) ? structuredClone(value) : value
}

/**
 * Walks to the container that holds the last token. With `create`, absent
 * object members (or undefined ones) on the way become new objects. Answers
 * the container, or a description of what is in the way.
 */
function walkToParent (root: Args, tokens: readonly string[], create: boolean): Container | string {
  let current: Container = root
  for (let i = 0; i < tokens.length - 1; i++) {
    const token = tokens[i] as string
    let next: unknown
    if (Array.isArray(current)) {
      const index = arrayIndex(token)
      if (index < 0 || index >= current.length) {
        return `${formatPointer(tokens.slice(0, i))} is an array without index ${JSON.stringify(token)}`
      }
      next = current[index]
    } else {
      next = Object.hasOwn(current, token) ? current[token] : undefined
      if (next === undefined) {
        if (!create) return `${formatPointer(tokens.slice(0, i + 1))} is absent`
        next = {}
        defineOwn(current, token, next)
      }
    }
    if (!isContainer(next)) return `${formatPointer(tokens.slice(0, i + 1))} is not an object or array`
    current = next
  }
  return current
}

function applyRule (root: Args, rule: RewriteRule, tokens: readonly string[]): void {
  const last = tokens[tokens.length - 1] as string
  const parent = walkToParent(root, tokens, rule.op === 'set' || rule.op === 'default')
  if (typeof parent === 'string') {
    if (rule.op === 'set') throw new RewriteError(`cannot set ${rule.path}: ${parent}`)
    return
  }

  if (Array.isArray(parent)) {
    // Only existing elements are addressable: a rule never grows an array
    const index = arrayIndex(last)
    const exists = index >= 0 && index < parent.length
    switch (rule.op) {
      case 'set':
        if (!exists) throw new RewriteError(`cannot set ${rule.path}: the array has no index ${JSON.stringify(last)}`)
        parent[index] = cloneValue(rule.value)
        return
      case 'default':
        if (exists && parent[index] === undefined) parent[index] = cloneValue(rule.value)
        return
      case 'remove':
        if (exists) parent.splice(index, 1)
        return
      case 'clamp':
        if (exists) parent[index] = clamp(parent[index], rule.min, rule.max)
        return
    }
  }

  const present = Object.hasOwn(parent, last) && parent[last] !== undefined
  switch (rule.op) {
    case 'set':
      defineOwn(parent, last, cloneValue(rule.value))
      return
    case 'default':
      if (!present) defineOwn(parent, last, cloneValue(rule.value))
      return
    case 'remove':
      if (Object.hasOwn(parent, last)) delete parent[last]
      return
    case 'clamp':
      if (present) parent[last] = clamp(parent[last], rule.min, rule.max)
  }
}

function clamp (value: unknown, min: number | undefined, max: number | undefined): unknown {
  if (typeof value !== 'number') return value
  if (typeof min === 'number' && value < min) return min
  if (typeof max === 'number' && value > max) return max
  return value
}

export interface RewriteOptions {
  /**
   * The caller owns `args` and lets the rules change it, sparing a clone.
   * A rule that throws may leave the earlier rules' changes behind.
   * @default false
   */
  readonly inPlace?: boolean
}

/**
 * Applies the rules in order: `set` forces a value, creating missing
 * intermediate objects; `default` sets a value only where none is (absent
 * or undefined; null is a value), and only where the path can be made of
 * objects; `remove` deletes a member or array element if present; `clamp`
 * bounds a number by `min` and/or `max` and leaves anything else alone.
 * Paths are RFC 6901 pointers; array elements are addressable where they
 * exist. Returns a copy (`args` itself when there are no rules or with
 * `inPlace`); throws a RewriteError when a rule cannot be enforced.
 */
export function applyRewrites (args: Args, rules: readonly RewriteRule[], options?: RewriteOptions): Args {
  if (rules.length === 0) return args
  const out = options?.inPlace === true ? args : structuredClone(args)
  for (const rule of rules) {
    let tokens: string[]
    try {
      tokens = parsePointer(rule.path)
    } catch (err) {
      throw new RewriteError((err as Error).message)
    }
    if (tokens.length === 0) throw new RewriteError('a rewrite rule cannot address the whole arguments object')
    applyRule(out, rule, tokens)
  }
  return out
}
