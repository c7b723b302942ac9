/**
 * The JSON helpers every layer shares: the deepest nesting toolgate
 * accepts, the checks for a JSON object and a plain one, and the RFC 8785
 * canonical form (fingerprints, conflict keys, operation ids).
 */

/**
 * The deepest nesting of objects and arrays accepted in a request body and
 * in a call's arguments (SPEC section 9; the top-level object is level 1).
 * The canonical form's quick check gives up deeper than this too (the
 * writer, which finds cycles, takes over).
 */
export const MAX_JSON_DEPTH = 64

/**
 * Whether JSON text nests objects and arrays deeper than `limit` (the
 * top-level value is level 1), read from the text in one pass, before it is
 * parsed: parsing a text nested hundreds of thousands deep holds the event
 * loop for most of a second, and only to refuse it afterwards. For text
 * that is not valid JSON the answer says nothing; the parse that follows
 * refuses it.
 */
export function jsonTextNestsDeeper (text: string, limit: number): boolean {
  // Deeper than `limit` takes more than `limit` opening brackets.
  if (text.length <= limit) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++
      else if (c === 0x22) inString = false
    } else if (c === 0x22) {
      inString = true
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true
    } else if (c === 0x7d || c === 0x5d) {
      depth--
    }
  }
  return false
}

/** A JSON object: not null, not an array (its prototype is not checked). */
export function isObject (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * A plain object: a JSON object whose prototype is Object.prototype (parsed
 * JSON) or null (jsonata builds its objects so), never a Date, Map or class
 * instance.
 */
export function isPlainObject (value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false
  const proto: unknown = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * The RFC 8785 (JCS) form of a JSON value, in one pass: members sorted by
 * UTF-16 code units, strings and numbers as ECMAScript's JSON.stringify
 * writes them (RFC 8785 takes both from it), no whitespace.
 *
 * Throws a TypeError for anything JSON cannot hold: `undefined` (at the top
 * level or as an array element), functions, symbols, BigInts, NaN and
 * ±Infinity, cycles and objects that are not plain (Date, Map, class
 * instances...). An object property whose value is `undefined` is omitted,
 * as `JSON.stringify` does, so the form matches what an executor would
 * receive. Lone surrogates are kept, escaped as `\udXXX` (ECMAScript's
 * well-formed `JSON.stringify`): a raw argument string from a model may hold
 * one, and it must still fingerprint deterministically.
 *
 * Written here rather than taken from the canonicalize package (which a
 * property test holds it to): that package walks and sorts with a fresh
 * array per object, which was a third of the memory a batch allocated.
 */
export function canonicalJson (value: unknown): string {
  if (value === undefined) {
    throw new TypeError('Expected a JSON value, got undefined')
  }
  // Arguments often are canonical already (one key, keys in order, arrays of
  // scalars): then the engine's own JSON.stringify writes exactly RFC 8785.
  if (stringifiesCanonically(value, 0)) return JSON.stringify(value)
  return write(value, [], true)
}

/** The JCS text of a value, and whether JSON.stringify writes exactly the same. */
export interface CanonicalText {
  text: string
  /** `text` is also what JSON.stringify writes (the value was canonical already), so it stands for both. */
  plain: boolean
  /** What JSON.stringify writes, when `text` is not that and it was written already (large arguments, each in its call's own slice of the event loop). */
  json?: string
}

/**
 * canonicalJson, telling as well whether the text is also JSON.stringify's:
 * a caller that needs both (a fingerprint and a body to send) serializes
 * once instead of twice.
 */
export function canonicalText (value: unknown): CanonicalText {
  if (value === undefined) {
    throw new TypeError('Expected a JSON value, got undefined')
  }
  if (stringifiesCanonically(value, 0)) return { text: JSON.stringify(value), plain: true }
  return { text: write(value, [], true), plain: false }
}


/** What a value is to the canonical form: a scalar JSON holds (null among them), an object or array, or what JSON cannot hold. */
function kindOf (value: unknown): 'scalar' | 'object' | 'invalid' {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return 'scalar'
    case 'number':
      return Number.isFinite(value) ? 'scalar' : 'invalid'
    case 'object':
      return value === null ? 'scalar' : 'object'
    default:
      return 'invalid'
  }
}

/**
 * Whether JSON.stringify writes `value` as RFC 8785 does: only strings,
 * booleans, null, finite numbers, arrays without holes and plain objects
 * whose keys come in UTF-16 code-unit order, none of them undefined.
 * Anything else, including what the writer must refuse, answers false and
 * goes to the writer. Walks without allocating and stops at the first key
 * out of order.
 */
function stringifiesCanonically (value: unknown, depth: number): boolean {
  const kind = kindOf(value)
  if (kind !== 'object') return kind === 'scalar'
  if (depth >= MAX_JSON_DEPTH) return false
  const object = value as object
  if (Array.isArray(object)) {
    for (let i = 0; i < object.length; i++) {
      if (!(i in object) || !stringifiesCanonically(object[i], depth + 1)) return false
    }
    return true
  }
  const proto: unknown = Object.getPrototypeOf(object)
  if (proto !== Object.prototype && proto !== null) return false
  let previous: string | null = null
  for (const key in object) {
    if (previous !== null && previous > key) return false
    previous = key
    const member = (object as Record<string, unknown>)[key]
    if (member === undefined || !stringifiesCanonically(member, depth + 1)) return false
  }
  return true
}

/**
 * An object of more keys or an array of more items than this is written by
 * the engine's JSON.stringify when it can be (see `sharedKeys`): a batch's
 * arguments at the body limit can hold a hundred thousand members, and
 * writing each of them here held the event loop for tens of milliseconds.
 */
const WIDE = 64

// Messages name the kind of value but never where it sits: key names are
// part of the arguments, which telemetry must not carry. `shared`: a wide
// object or array may be written through sharedKeys (false once that
// failed for one of its ancestors: its walk covered this value already).
function write (value: unknown, ancestors: object[], shared: boolean): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'number':
      if (!Number.isFinite(value)) {
        throw new TypeError(`Expected a finite number, got ${String(value)}`)
      }
      return JSON.stringify(value)
    case 'undefined':
      throw new TypeError('Expected a JSON value, got undefined')
    case 'bigint':
    case 'function':
    case 'symbol':
      throw new TypeError(`Expected a JSON value, got a ${typeof value}`)
  }
  if (value === null) return 'null'
  const object = value as object
  if (ancestors.includes(object)) {
    throw new TypeError('Expected a JSON value, got a cycle')
  }
  if (shared && Array.isArray(object) && object.length > WIDE) {
    const keys = sharedKeys(object, ancestors)
    if (keys !== null) return JSON.stringify(object, keys)
    shared = false
  }
  ancestors.push(object)
  let out: string
  if (Array.isArray(object)) {
    out = '['
    // A plain loop (not forEach) so holes are visited and refused.
    for (let i = 0; i < object.length; i++) {
      if (i > 0) out += ','
      out += write(object[i], ancestors, shared)
    }
    out += ']'
  } else {
    const proto: unknown = Object.getPrototypeOf(object)
    if (proto !== Object.prototype && proto !== null) {
      const name = (object as { constructor?: { name?: unknown } }).constructor?.name
      throw new TypeError(`Expected a plain object, got ${typeof name === 'string' ? name : 'an exotic object'}`)
    }
    const members = object as Record<string, unknown>
    const keys = sortInPlace(Object.keys(members))
    if (shared && keys.length > WIDE) {
      ancestors.pop()
      // Its own keys, when its members are all scalars: every key of the list is then its own, none read through its prototype.
      const list = scalarMembers(members, keys) ? keys : sharedKeys(object, ancestors)
      if (list !== null) return JSON.stringify(object, list)
      ancestors.push(object)
      shared = false
    }
    out = '{'
    for (const key of keys) {
      const member = members[key]
      if (member === undefined) continue
      if (out.length > 1) out += ','
      out += JSON.stringify(key) + ':' + write(member, ancestors, shared)
    }
    out += '}'
  }
  ancestors.pop()
  return out
}

/** Whether every member of `members` named in `keys` is a string, a boolean, a finite number or null. */
function scalarMembers (members: Record<string, unknown>, keys: readonly string[]): boolean {
  for (let i = 0; i < keys.length; i++) {
    if (kindOf(members[keys[i]!]) !== 'scalar') return false
  }
  return true
}

/**
 * Every key of the objects in `value`, sorted, when JSON.stringify given
 * them as its property list writes `value` exactly as `write` does: each
 * object's members are then written in that list's order (sorted, so in
 * RFC 8785's), strings and numbers as `write` writes them, and the work is
 * the engine's. Null when it might not be, and `write` goes on: any value
 * `write` refuses or omits (undefined, a function, a number that is not
 * finite, an object that is not plain, a cycle: `write` then says which),
 * a key Object.prototype has (JSON.stringify reads a missing member
 * through the prototype: `__proto__` would be written), or objects whose
 * keys differ so much that looking every key up in every object would cost
 * more than writing them here. `ancestors` are the objects `value` sits in.
 */
function sharedKeys (value: object, ancestors: object[]): string[] | null {
  const keys = new Set<string>()
  const walk = { objects: 0, members: 0 }
  if (!collectKeys(value, ancestors, keys, walk)) return null
  // JSON.stringify looks each key of the list up in each object.
  if (walk.objects * keys.size > 4 * walk.members + 64) return null
  return sortInPlace(Array.from(keys))
}

/** Adds the keys of every object in `value` to `keys`; false at the first thing sharedKeys refuses. */
function collectKeys (value: unknown, ancestors: object[], keys: Set<string>, walk: { objects: number, members: number }): boolean {
  const kind = kindOf(value)
  if (kind !== 'object') return kind === 'scalar'
  const object = value as object
  if (ancestors.length >= MAX_JSON_DEPTH || ancestors.includes(object)) return false
  ancestors.push(object)
  let ok = true
  if (Array.isArray(object)) {
    for (let i = 0; i < object.length && ok; i++) ok = i in object && collectKeys(object[i], ancestors, keys, walk)
  } else {
    const proto: unknown = Object.getPrototypeOf(object)
    ok = proto === Object.prototype || proto === null
    const own = Object.keys(object)
    walk.objects++
    walk.members += own.length
    for (let i = 0; i < own.length && ok; i++) {
      const key = own[i]!
      if (!keys.has(key)) {
        if (key in Object.prototype) ok = false
        keys.add(key)
      }
      ok &&= collectKeys((object as Record<string, unknown>)[key], ancestors, keys, walk)
    }
  }
  ancestors.pop()
  return ok
}

/**
 * Sorts keys by UTF-16 code units, as Array.prototype.sort does, but in
 * place for the few keys arguments usually have: sort() sets up a work area
 * of its own on every call. Many keys are sorted code unit by code unit
 * (multikeySort): sort() compares whole strings through the engine's
 * generic comparison, about twice as long on 25,000 to 100,000 keys.
 */
function sortInPlace (keys: string[]): string[] {
  if (keys.length > MANY_KEYS) multikeySort(keys, 0, keys.length, 0)
  else if (keys.length > 16) keys.sort()
  else insertionSort(keys, 0, keys.length)
  return keys
}

/** Past this many keys, sortInPlace sorts them code unit by code unit. */
const MANY_KEYS = 256

function insertionSort (keys: string[], lo: number, hi: number): void {
  for (let i = lo + 1; i < hi; i++) {
    const key = keys[i]!
    let j = i - 1
    while (j >= lo && keys[j]! > key) {
      keys[j + 1] = keys[j]!
      j--
    }
    keys[j + 1] = key
  }
}

/**
 * Sorts keys[lo, hi), which agree on their first `depth` code units, by
 * three-way partitions on the code unit at `depth` (-1 past a key's end,
 * so a prefix comes first): Bentley and Sedgewick's multikey quicksort.
 * The pivot is drawn at random, so no order of keys makes it quadratic;
 * the order it gives is the one order of the keys, whatever the draws.
 */
function multikeySort (keys: string[], lo: number, hi: number, depth: number): void {
  while (hi - lo > 16) {
    const pivot = unitAt(keys[lo + Math.floor(Math.random() * (hi - lo))]!, depth)
    let lt = lo
    let gt = hi - 1
    for (let i = lo; i <= gt;) {
      const key = keys[i]!
      const unit = unitAt(key, depth)
      if (unit < pivot) {
        keys[i++] = keys[lt]!
        keys[lt++] = key
      } else if (unit > pivot) {
        keys[i] = keys[gt]!
        keys[gt--] = key
      } else {
        i++
      }
    }
    multikeySort(keys, lo, lt, depth)
    multikeySort(keys, gt + 1, hi, depth)
    // Keys that ended at `depth` are equal: nothing left to order among them.
    if (pivot < 0) return
    lo = lt
    hi = gt + 1
    depth++
  }
  insertionSort(keys, lo, hi)
}

function unitAt (key: string, depth: number): number {
  return depth < key.length ? key.charCodeAt(depth) : -1
}
