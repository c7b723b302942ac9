/**
 * The compatibility stage (SPEC section 5, step 1): find the tool, read the
 * arguments however the model's API sent them, rename argument aliases and
 * coerce scalars where the schema leaves no doubt. Every function is pure.
 */
import type { Tool, ToolLookup } from '../model/tool.js'
import { MAX_JSON_DEPTH, isPlainObject, jsonTextNestsDeeper } from '../model/json.js'
import type { StageResult } from './types.js'


type Args = Record<string, unknown>

function invalid (message: string): StageResult<never> {
  return { ok: false, reason: 'invalid_arguments', message }
}



/**
 * Finds the first problem of a parsed value: nesting deeper than `maxDepth`
 * (the top-level object is depth 1), a value JSON cannot hold (only an object
 * given in process can have one), or a key that could pollute a prototype
 * once copied by a careless merge. The keys refused are those secure-json-parse
 * refuses: `__proto__`, and `prototype` inside a `constructor` object.
 */
function findProblem (value: unknown, depth: number, maxDepth: number, underConstructor: boolean): string | null {
  if (value === null) return null
  const type = typeof value
  if (type === 'function' || type === 'symbol' || type === 'bigint') return 'arguments must hold only JSON values'
  // JSON text like 1e400 parses to Infinity, which no JSON can hold
  if (type === 'number' && !Number.isFinite(value)) return 'arguments must hold only finite numbers'
  if (type !== 'object') return null
  if (depth > maxDepth) return `arguments nest deeper than ${maxDepth} levels`
  if (Array.isArray(value)) {
    for (const item of value) {
      const problem = findProblem(item, depth + 1, maxDepth, false)
      if (problem !== null) return problem
    }
    return null
  }
  for (const key of Object.keys(value as Args)) {
    if (key === '__proto__') return 'arguments must not contain the key "__proto__"'
    if (underConstructor && key === 'prototype') return 'arguments must not contain "constructor.prototype"'
    const problem = findProblem((value as Args)[key], depth + 1, maxDepth, key === 'constructor')
    if (problem !== null) return problem
  }
  return null
}

function checked (value: unknown, maxDepth: number): StageResult<Args> {
  if (!isPlainObject(value)) return invalid('arguments must be a JSON object')
  const problem = findProblem(value, 1, maxDepth, false)
  return problem === null ? { ok: true, value } : invalid(problem)
}

/**
 * Reads a call's `arguments`: an object as it is; a JSON string of an object;
 * an empty or blank string, undefined or null as `{}`; a JSON string whose
 * content is itself a JSON string of an object, decoded once more (only once).
 * Anything else is `invalid_arguments`, with a message that never repeats the
 * values. The result of a string is a fresh object; an object is returned as
 * given (not copied), so later stages must not mutate it.
 */
export function parseArguments (raw: unknown, maxDepth = MAX_JSON_DEPTH): StageResult<Args> {
  if (raw === undefined || raw === null) return { ok: true, value: {} }
  if (typeof raw !== 'string') return checked(raw, maxDepth)
  if (raw.trim() === '') return { ok: true, value: {} }
  if (jsonTextNestsDeeper(raw, maxDepth)) return invalid(`arguments nest deeper than ${maxDepth} levels`)
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
    if (typeof parsed === 'string') {
      if (jsonTextNestsDeeper(parsed, maxDepth)) return invalid(`arguments nest deeper than ${maxDepth} levels`)
      parsed = JSON.parse(parsed)
    }
  } catch {
    return invalid('arguments are not valid JSON')
  }
  return checked(parsed, maxDepth)
}

/** Sets an own property, even one named `__proto__`, without touching a prototype. */
export function defineOwn (target: Args, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true })
  } else {
    target[key] = value
  }
}

/**
 * Renames top-level argument aliases (`{ alias: realName }`) to their real
 * names. When the model sent both an alias and its real name, the real name
 * wins and the alias is dropped: the real name is what the schema documents,
 * so it is the more deliberate of the two. When two aliases of one name are
 * sent without it, the first in argument order wins. Returns `args` itself
 * when there is nothing to rename, otherwise a new object; never mutates.
 */
export function renameArgumentAliases (args: Args, aliases: Readonly<Record<string, string>>): Args {
  let any = false
  for (const alias in aliases) {
    if (Object.hasOwn(aliases, alias) && Object.hasOwn(args, alias) && aliases[alias] !== alias) {
      any = true
      break
    }
  }
  if (!any) return args
  const out: Args = {}
  for (const key of Object.keys(args)) {
    const real = Object.hasOwn(aliases, key) ? aliases[key] : undefined
    if (real === undefined || real === key) {
      defineOwn(out, key, args[key])
    } else if (!Object.hasOwn(args, real) && !Object.hasOwn(out, real)) {
      defineOwn(out, real, args[key])
    }
  }
  return out
}

const INTEGER = /^-?(0|[1-9]\d*)$/
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/

type Schema = Record<string, unknown>

function asSchema (value: unknown): Schema | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value as Schema : null
}

/** The one type a schema allows besides null, or null when there is not exactly one. */
function singleType (schema: Schema): string | null {
  const type = schema.type
  if (typeof type === 'string') return type
  if (!Array.isArray(type)) return null
  let found: string | null = null
  for (const member of type) {
    if (member === 'null') continue
    if (found !== null || typeof member !== 'string') return null
    found = member
  }
  return found
}

function coerceString (value: string, type: string | null): unknown {
  switch (type) {
    case 'integer': {
      if (!INTEGER.test(value)) return value
      const n = Number(value)
      return Number.isSafeInteger(n) ? n : value
    }
    case 'number': {
      if (!JSON_NUMBER.test(value)) return value
      const n = Number(value)
      return Number.isFinite(n) ? n : value
    }
    case 'boolean':
      return value === 'true' ? true : value === 'false' ? false : value
    default:
      return value
  }
}

function coerceValue (value: unknown, schemaValue: unknown): unknown {
  const schema = asSchema(schemaValue)
  if (schema === null) return value
  if (typeof value === 'string') return coerceString(value, singleType(schema))
  if (Array.isArray(value)) return coerceArray(value, schema)
  if (value !== null && typeof value === 'object') return coerceObject(value as Args, schema)
  return value
}

function coerceArray (value: unknown[], schema: Schema): unknown[] {
  const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : []
  const items = asSchema(schema.items)
  if (prefix.length === 0 && items === null) return value
  let out: unknown[] | null = null
  for (let i = 0; i < value.length; i++) {
    const itemSchema = i < prefix.length ? prefix[i] : items
    const before = value[i]
    const after = coerceValue(before, itemSchema)
    if (after !== before) {
      out ??= value.slice()
      out[i] = after
    }
  }
  return out ?? value
}

function coerceObject (value: Args, schema: Schema): Args {
  const properties = asSchema(schema.properties)
  if (properties === null) return value
  let out: Args | null = null
  for (const key of Object.keys(properties)) {
    if (!Object.hasOwn(value, key)) continue
    const before = value[key]
    const after = coerceValue(before, properties[key])
    if (after !== before) {
      out ??= { ...value }
      out[key] = after
    }
  }
  return out ?? value
}

/**
 * Converts strings to the scalar the schema asks for where nothing else could
 * be meant: at a place whose schema has exactly one non-null `type` of
 * `integer` ("5", within the safe range; not "5.5" or "1e3"), `number` (a
 * finite JSON number, "1e3" included) or `boolean` ("true", "false"). It walks
 * `properties`, `items` and `prefixItems` only: `$ref`, `anyOf`, `oneOf`,
 * `allOf`, `additionalProperties` and the like are not followed, because what
 * they allow is either not local or not a single type. A value of any other
 * type is left alone, and nothing is ever turned into a string.
 * Copy-on-write: returns `args` itself when nothing changed; never mutates.
 */
export function coerceScalars (args: Args, schema: Readonly<Record<string, unknown>>): Args {
  return coerceObject(args, schema)
}

/** Finds the tool a call names, by its name or one of its aliases. */
export function resolveTool (name: unknown, lookup: ToolLookup): StageResult<Tool> {
  const tool = typeof name === 'string' ? lookup.resolve(name) : undefined
  if (tool !== undefined) return { ok: true, value: tool }
  const shown = typeof name === 'string' ? ` ${JSON.stringify(name.slice(0, 64))}` : ''
  if (typeof name === 'string' && lookup.quarantined?.(name) === true) {
    return { ok: false, reason: 'tool_quarantined', message: `the tool${shown} is held in quarantine until an admin approves it: its server offers it as a new tool, or with a definition other than the one approved` }
  }
  return { ok: false, reason: 'unknown_tool', message: `there is no tool named${shown}` }
}
