import canonicalizeModule from 'canonicalize'
import { sha256 } from './sha256.js'

type Serialize = (input: unknown) => string | undefined

// canonicalize is CommonJS (`module.exports = fn`) but its typings declare
// `export default`, so under NodeNext TypeScript types the default import as
// `{ default: fn }` while Node hands us `fn` itself. Accept either shape.
const canonicalizeExport = canonicalizeModule as unknown as Serialize | { default: Serialize }
const serialize: Serialize = typeof canonicalizeExport === 'function'
  ? canonicalizeExport
  : canonicalizeExport.default

const FINGERPRINT_PATTERN = /^[0-9a-f]{64}$/

/** How many hex characters of a fingerprint telemetry may show. */
export const FINGERPRINT_PREFIX_LENGTH = 12

/**
 * The RFC 8785 (JCS) form of a JSON value.
 *
 * Throws a TypeError for anything JSON cannot hold: `undefined` (at the top
 * level or as an array element), functions, symbols, BigInts, NaN and
 * ±Infinity, cycles and objects that are not plain (Date, Map, class
 * instances...). canonicalize itself would silently drop some of these, emit
 * invalid JSON for others, or call `toJSON`, so they are refused up front.
 * An object property whose value is `undefined` is omitted, as
 * `JSON.stringify` does, so the form matches what an executor would receive.
 * Lone surrogates are kept, escaped as `\udXXX` (ECMAScript's well-formed
 * `JSON.stringify`): a raw argument string from a model may hold one, and
 * it must still fingerprint deterministically.
 */
export function canonicalJson (value: unknown): string {
  if (value === undefined) {
    throw new TypeError('Expected a JSON value, got undefined')
  }
  assertJsonHoldable(value, new Set())
  const text = serialize(value)
  if (typeof text !== 'string') {
    // Unreachable after the check above; kept so a change in canonicalize cannot go unnoticed.
    throw new TypeError('canonicalize did not produce a string')
  }
  return text
}

// Messages name the kind of value but never where it sits: key names are
// part of the arguments, which telemetry must not carry.
function assertJsonHoldable (value: unknown, ancestors: Set<object>): void {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return
    case 'number':
      if (!Number.isFinite(value)) {
        throw new TypeError(`Expected a finite number, got ${String(value)}`)
      }
      return
    case 'undefined':
      throw new TypeError(`Expected a JSON value, got undefined`)
    case 'bigint':
    case 'function':
    case 'symbol':
      throw new TypeError(`Expected a JSON value, got a ${typeof value}`)
  }
  if (value === null) return
  const object = value as object
  if (ancestors.has(object)) {
    throw new TypeError(`Expected a JSON value, got a cycle`)
  }
  ancestors.add(object)
  if (Array.isArray(object)) {
    // A plain loop (not forEach) so holes are visited and refused.
    for (let i = 0; i < object.length; i++) {
      assertJsonHoldable(object[i], ancestors)
    }
  } else {
    const proto: unknown = Object.getPrototypeOf(object)
    if (proto !== Object.prototype && proto !== null) {
      const name = (object as { constructor?: { name?: unknown } }).constructor?.name
      throw new TypeError(`Expected a plain object, got ${typeof name === 'string' ? name : 'an exotic object'}`)
    }
    for (const member of Object.values(object)) {
      if (member !== undefined) {
        assertJsonHoldable(member, ancestors)
      }
    }
  }
  ancestors.delete(object)
}

/**
 * The exact-repeat fingerprint of a call (SPEC section 6): SHA-256 hex of the
 * JCS form of `[toolName, args]`, so the name and the arguments can never run
 * into each other. `args` is the prepared arguments, or, for a call whose
 * arguments did not parse, the raw argument string, which is hashed as a JSON
 * string value and therefore never equals an object with the same text.
 */
export function fingerprint (toolName: string, args: unknown): string {
  if (typeof toolName !== 'string') {
    throw new TypeError(`Expected \`toolName\` to be a string, got ${typeof toolName}`)
  }
  return sha256(canonicalJson([toolName, args]), 'hex')
}

/** The only form of a fingerprint telemetry may show: its first 12 hex characters. */
export function fingerprintPrefix (fp: string): string {
  if (typeof fp !== 'string' || !FINGERPRINT_PATTERN.test(fp)) {
    throw new TypeError('Expected `fp` to be a SHA-256 hex fingerprint')
  }
  return fp.slice(0, FINGERPRINT_PREFIX_LENGTH)
}
