/**
 * The cost model of a tool's `inputSchema` (SPEC section 19): what a schema
 * may cost to compile and to validate with, checked before Ajv sees it, so
 * that no definition (from the tools file, the API or an MCP server) can
 * make a compile or a call's validation take unbounded time or memory.
 *
 * Each problem names the limit and the JSON pointer of the part over it.
 * A schema within the limits also gets a weight: what validating one unit
 * of data with it may cost at most, which ./bounded-validate.ts multiplies
 * by the size of a call's arguments to decide where to validate them.
 */
import { patternCost } from '../model/linear-regexp.js'


/** The limits a schema is held to; only the byte size is a setting (TOOLGATE_MAX_SCHEMA_BYTES). */
export interface SchemaLimits {
  /** Most bytes of the schema as JSON (UTF-8). */
  readonly maxBytes: number
  /** Deepest nesting of subschemas, written or reached through `$ref`. */
  readonly maxDepth: number
  /** Most property names (`properties`, `patternProperties`, `dependentSchemas` keys) in the whole schema: Ajv's generated validator nests a block per property. */
  readonly maxProperties: number
  /** Most branches of one `anyOf`, `oneOf` or `allOf`. */
  readonly maxBranches: number
  /** Most subschemas once every `$ref` is expanded in place: nested branching through references multiplies. */
  readonly maxExpandedNodes: number
  /** Most instructions the schema's distinct patterns (`pattern`, `patternProperties` keys) compile to, estimated from their text: RE2 writes counted repeats out, and compiling takes time in proportion. */
  readonly maxPatternInstructions: number
}

export const DEFAULT_MAX_SCHEMA_BYTES = 256 * 1024

export const SCHEMA_LIMITS: Omit<SchemaLimits, 'maxBytes'> = Object.freeze({
  maxDepth: 32,
  maxProperties: 1000,
  maxBranches: 64,
  maxExpandedNodes: 10_000,
  maxPatternInstructions: 10_000
})

/** Keywords whose value is one subschema, and whether it applies to a part of the instance (descends) or to the instance itself. */
const ONE: ReadonlyMap<string, boolean> = new Map([
  ['not', false], ['if', false], ['then', false], ['else', false],
  ['additionalProperties', true], ['propertyNames', true], ['items', true], ['contains', true],
  ['unevaluatedItems', true], ['unevaluatedProperties', true], ['additionalItems', true]
])
/** Keywords whose value maps names to subschemas. */
const MAP: ReadonlyMap<string, boolean> = new Map([
  ['properties', true], ['patternProperties', true], ['dependentSchemas', false], ['$defs', false], ['definitions', false]
])
/** Keywords whose value is a list of subschemas. */
const LIST: ReadonlyMap<string, boolean> = new Map([
  ['allOf', false], ['anyOf', false], ['oneOf', false], ['prefixItems', true], ['items', true]
])
const BRANCHING: ReadonlySet<string> = new Set(['allOf', 'anyOf', 'oneOf'])
const PROPERTY_MAPS: ReadonlySet<string> = new Set(['properties', 'patternProperties', 'dependentSchemas'])
/** Definitions are compiled only where a `$ref` reaches them. */
const DEFINITIONS: ReadonlySet<string> = new Set(['$defs', 'definitions'])

type Schema = Record<string, unknown>

/** A subschema and where it sits, as the walks visit it. */
interface Child { schema: unknown, pointer: string, descends: boolean, definition: boolean, part: string }

/** Which part of an instance a keyword's subschemas apply to: an array's items, one named property, or an object's other properties. */
function partOf (key: string, name: string): string {
  if (ARRAY_PARTS.has(key)) return 'items'
  return key === 'properties' ? `property:${name}` : 'properties'
}
const ARRAY_PARTS: ReadonlySet<string> = new Set(['items', 'prefixItems', 'contains', 'unevaluatedItems', 'additionalItems'])

/**
 * What is wrong with `schema` under `limits`, each as `<pointer>: <why>`
 * (pointers start at `base`, e.g. `/inputSchema`); empty when it is within
 * every limit.
 */
export function schemaCostProblems (schema: unknown, limits: SchemaLimits, base = '/inputSchema'): string[] {
  return schemaCost(schema, limits, base).problems
}

/** A schema's problems (as schemaCostProblems) and, when it has none, its validation weight. */
export interface SchemaCost {
  readonly problems: string[]
  /**
   * At most what validating one byte of data costs with the schema, in
   * units of about one comparison: the weights of the subschemas as
   * expanded through `$ref` (each applies to a part of the data at most
   * once), where a subschema weighs 1 plus its `enum` values, its `const`'s
   * size, its patterns' instructions and the like. Infinity for a schema
   * that refers back to itself from more than one place: each level of the
   * data may then be validated once per path, exponentially many.
   */
  readonly weight: number
}

export function schemaCost (schema: unknown, limits: SchemaLimits, base = '/inputSchema'): SchemaCost {
  const bytes = Buffer.byteLength(JSON.stringify(schema) ?? '')
  if (bytes > limits.maxBytes) return { problems: [`${base}: is ${bytes} bytes, over the limit of ${limits.maxBytes} (TOOLGATE_MAX_SCHEMA_BYTES)`], weight: Infinity }
  const written = checkWritten(schema, limits, base)
  if (written !== null) return { problems: [written], weight: Infinity }
  const expanded = checkExpanded(schema, limits, base)
  return typeof expanded === 'string' ? { problems: [expanded], weight: Infinity } : { problems: [], weight: expanded }
}

/** What a subschema's own keywords cost per unit of data they are applied to (see SchemaCost's weight). */
function ownWeight (schema: Schema): number {
  let weight = 1
  if (Array.isArray(schema.enum)) weight += schema.enum.length + jsonBytes(schema.enum) / 16
  if (Object.hasOwn(schema, 'const')) weight += 1 + jsonBytes(schema.const) / 16
  if (typeof schema.pattern === 'string') weight += patternCost(schema.pattern)
  if (isObject(schema.patternProperties)) for (const key of Object.keys(schema.patternProperties)) weight += patternCost(key)
  if (isObject(schema.properties)) weight += Object.keys(schema.properties).length
  if (Array.isArray(schema.required)) weight += schema.required.length
  if (typeof schema.format === 'string') weight += 8
  if (schema.uniqueItems === true) weight += 8
  return weight
}

function jsonBytes (value: unknown): number {
  return (JSON.stringify(value) ?? '').length
}

/** The subschemas of one schema object, with their pointers. */
function childrenOf (schema: Schema, pointer: string): Child[] {
  const out: Child[] = []
  for (const [key, value] of Object.entries(schema)) {
    const at = `${pointer}/${escape(key)}`
    if (Array.isArray(value) && LIST.has(key)) {
      for (const [i, item] of value.entries()) out.push({ schema: item, pointer: `${at}/${i}`, descends: LIST.get(key)!, definition: false, part: partOf(key, '') })
    } else if (ONE.has(key) && !Array.isArray(value)) {
      out.push({ schema: value, pointer: at, descends: ONE.get(key)!, definition: false, part: partOf(key, '') })
    } else if (MAP.has(key) && isObject(value)) {
      for (const [name, member] of Object.entries(value)) {
        out.push({ schema: member, pointer: `${at}/${escape(name)}`, descends: MAP.get(key)!, definition: DEFINITIONS.has(key), part: partOf(key, name) })
      }
    }
  }
  return out
}

/** The schema as written: nesting, property names and branches, every subschema visited once (definitions too). */
function checkWritten (root: unknown, limits: SchemaLimits, base: string): string | null {
  let properties = 0
  // Each distinct pattern is compiled once (linear-regexp.ts keeps them).
  const patterns = new Set<string>()
  let instructions = 0
  const weigh = (pattern: string, at: string): string | null => {
    if (patterns.has(pattern)) return null
    patterns.add(pattern)
    instructions += patternCost(pattern)
    return instructions > limits.maxPatternInstructions ? `${at}: the schema's patterns are too costly: they compile to more than ${limits.maxPatternInstructions} instructions, the limit` : null
  }
  // Depth first, without recursion: a deep schema from a file or a server cannot overflow this walk.
  const stack: Array<{ schema: unknown, pointer: string, depth: number }> = [{ schema: root, pointer: base, depth: 1 }]
  while (stack.length > 0) {
    const { schema, pointer, depth } = stack.pop()!
    if (!isObject(schema)) continue
    if (depth > limits.maxDepth) return `${pointer}: nests subschemas ${depth} deep, over the limit of ${limits.maxDepth}`
    for (const [key, value] of Object.entries(schema)) {
      if (BRANCHING.has(key) && Array.isArray(value) && value.length > limits.maxBranches) {
        return `${pointer}/${key}: has ${value.length} branches, over the limit of ${limits.maxBranches}`
      }
      if (PROPERTY_MAPS.has(key) && isObject(value)) {
        properties += Object.keys(value).length
        if (properties > limits.maxProperties) return `${pointer}/${escape(key)}: the schema names more than ${limits.maxProperties} properties, the limit`
      }
      if (key === 'pattern' && typeof value === 'string') {
        const problem = weigh(value, `${pointer}/pattern`)
        if (problem !== null) return problem
      }
      if (key === 'patternProperties' && isObject(value)) {
        for (const name of Object.keys(value)) {
          const problem = weigh(name, `${pointer}/patternProperties/${escape(name)}`)
          if (problem !== null) return problem
        }
      }
      if ((key === '$dynamicRef' || key === '$recursiveRef') && typeof value === 'string') {
        return `${pointer}/${key}: dynamic references are not supported; use $ref`
      }
      if (key === '$ref' && typeof value === 'string' && !value.startsWith('#')) {
        return `${pointer}/$ref: only references inside the schema (starting with #) are supported`
      }
    }
    for (const child of childrenOf(schema, pointer)) stack.push({ schema: child.schema, pointer: child.pointer, depth: depth + 1 })
  }
  return null
}

class CostExceeded extends Error {
  constructor (readonly problem: string) { super(problem) }
}

/**
 * The schema as Ajv compiles and applies it: every `$ref` followed where it
 * stands. Counts subschemas with references expanded (shared ones counted
 * per use, as nested branching through them multiplies the work), bounds
 * the depth reached through references, and refuses a reference cycle that
 * never moves into a part of the instance: it would recurse on the same
 * value forever. Answers the problem, or the schema's weight (SchemaCost).
 */
function checkExpanded (root: unknown, limits: SchemaLimits, base: string): string | number {
  const anchors = anchorsOf(root)
  /** Per subschema expanded: its subschemas, their weight, and the references back to an enclosing subschema they hold. */
  const sizes = new Map<object, Expanded>()
  /** Subschemas being expanded, with how many times the walk had moved into the instance when it entered each. */
  const open = new Map<object, number>()
  let total = 0
  let weight = 0
  /** References back, by the part of the instance their last move went into (partOf). */
  const backReferences = new Map<string, number>()
  const count = (into: Map<string, number>, counts: ReadonlyMap<string, number>): void => {
    for (const [part, n] of counts) into.set(part, (into.get(part) ?? 0) + n)
  }

  const visit = (schema: unknown, pointer: string, depth: number, descents: number, part: string): Expanded => {
    if (!isObject(schema)) return LEAF
    const known = sizes.get(schema)
    if (known !== undefined) {
      total += known.size
      weight += known.weight
      count(backReferences, known.backReferences)
      if (total > limits.maxExpandedNodes) throw new CostExceeded(`${pointer}: expands to more than ${limits.maxExpandedNodes} subschemas through $ref and branching, the limit`)
      return known
    }
    const entered = open.get(schema)
    if (entered !== undefined) {
      // A reference back to a subschema being expanded: recursion, bounded only when it moves into the instance.
      if (entered === descents) throw new CostExceeded(`${pointer}: a $ref cycle applies the schema to the same value again without end`)
      const back = new Map([[part, 1]])
      count(backReferences, back)
      return { size: 1, weight: 0, backReferences: back }
    }
    if (depth > limits.maxDepth) throw new CostExceeded(`${pointer}: nests subschemas ${depth} deep through $ref, over the limit of ${limits.maxDepth}`)
    open.set(schema, descents)
    total += 1
    const own = ownWeight(schema)
    weight += own
    if (total > limits.maxExpandedNodes) throw new CostExceeded(`${pointer}: expands to more than ${limits.maxExpandedNodes} subschemas through $ref and branching, the limit`)
    const expanded = { size: 1, weight: own, backReferences: new Map<string, number>() }
    const add = (sub: Expanded): void => {
      expanded.size += sub.size
      expanded.weight += sub.weight
      count(expanded.backReferences, sub.backReferences)
    }
    for (const child of childrenOf(schema, pointer)) {
      if (child.definition) continue
      add(visit(child.schema, child.pointer, depth + 1, descents + (child.descends ? 1 : 0), child.descends ? child.part : part))
    }
    if (typeof schema.$ref === 'string') {
      const target = resolve(root, schema.$ref, anchors)
      // An unresolvable reference is Ajv's to refuse, with its own message.
      if (target !== undefined) add(visit(target, targetPointer(schema.$ref, base, pointer), depth + 1, descents, part))
    }
    open.delete(schema)
    sizes.set(schema, expanded)
    return expanded
  }

  try {
    visit(root, base, 1, 0, '')
    return multiplies(backReferences) ? Infinity : weight
  } catch (err) {
    if (err instanceof CostExceeded) return err.problem
    throw err
  }
}

/**
 * Whether references back may apply a subschema to one part of the data
 * more than once per level, and so exponentially often in its depth: two
 * into an array's items, or two that may reach the same property (one
 * named property, or the properties no name lists). One into the items
 * and one into a property (a JSON value schema) never meet.
 */
function multiplies (backReferences: ReadonlyMap<string, number>): boolean {
  let named = 0
  for (const [part, n] of backReferences) if (part.startsWith('property:')) named = Math.max(named, n)
  return (backReferences.get('items') ?? 0) > 1 || (backReferences.get('properties') ?? 0) + named > 1 || (backReferences.get('') ?? 0) > 0
}

interface Expanded { readonly size: number, readonly weight: number, readonly backReferences: ReadonlyMap<string, number> }
const LEAF: Expanded = { size: 1, weight: 0, backReferences: new Map() }

/** The schema a local `$ref` names: a JSON pointer (`#/...`), the root (`#`) or an `$anchor` (`#name`). */
function resolve (root: unknown, ref: string, anchors: ReadonlyMap<string, unknown>): unknown {
  if (ref === '#') return root
  if (!ref.startsWith('#/')) return anchors.get(ref.slice(1))
  let node: unknown = root
  for (const raw of ref.slice(2).split('/')) {
    let token: string
    try { token = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~') } catch { return undefined }
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, token)) return undefined
    node = (node as Record<string, unknown>)[token]
  }
  return node
}

/** Where a reference's target is written: its own pointer for `#/...`, else the reference's. */
function targetPointer (ref: string, base: string, pointer: string): string {
  if (ref === '#') return base
  return ref.startsWith('#/') ? base + ref.slice(1) : `${pointer}/$ref`
}

/** Every `$anchor` of the schema and the subschema it names. */
function anchorsOf (root: unknown): Map<string, unknown> {
  const anchors = new Map<string, unknown>()
  const stack: unknown[] = [root]
  while (stack.length > 0) {
    const schema = stack.pop()
    if (!isObject(schema)) continue
    if (typeof schema.$anchor === 'string') anchors.set(schema.$anchor, schema)
    for (const child of childrenOf(schema, '')) stack.push(child.schema)
  }
  return anchors
}

function isObject (value: unknown): value is Schema {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

/** A JSON pointer token: `~` and `/` escaped. */
function escape (token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1')
}
