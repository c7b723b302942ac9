import { arrayIndex, parsePointer } from '../model/json-pointer.js'
import { fingerprint, fingerprintOfText } from './fingerprint.js'

/**
 * Parses a tool's `ignoreArguments` pointers once, at registration. Throws
 * an Error naming the problem: a pointer that is not RFC 6901, or the empty
 * pointer (ignoring the whole arguments would make every call one call).
 */
export function compileIgnoredArguments (pointers: readonly string[]): ReadonlyArray<readonly string[]> {
  return pointers.map((pointer) => {
    const tokens = parsePointer(pointer)
    if (tokens.length === 0) throw new Error('must point inside the arguments, not at the whole of them')
    return Object.freeze(tokens)
  })
}

/**
 * The arguments without the members the pointers name, for fingerprints
 * only: the value given is never changed (the executor receives it whole),
 * and only the objects and arrays on a removed member's path are copied.
 * A pointer that leads nowhere removes nothing; an array element is
 * spliced out.
 */
export function withoutIgnored (args: unknown, ignored: ReadonlyArray<readonly string[]>): unknown {
  let out = args
  for (const tokens of ignored) out = removeAt(out, tokens, 0)
  return out
}

function removeAt (value: unknown, tokens: readonly string[], depth: number): unknown {
  if (value === null || typeof value !== 'object') return value
  const token = tokens[depth]!
  const last = depth === tokens.length - 1
  if (Array.isArray(value)) {
    const i = arrayIndex(token)
    if (i < 0 || i >= value.length) return value
    const copy = value.slice()
    if (last) copy.splice(i, 1)
    else {
      const inner = removeAt(value[i], tokens, depth + 1)
      if (inner === value[i]) return value
      copy[i] = inner
    }
    return copy
  }
  const record = value as Record<string, unknown>
  if (!Object.hasOwn(record, token)) return value
  if (last) {
    const copy = { ...record }
    delete copy[token]
    return copy
  }
  const inner = removeAt(record[token], tokens, depth + 1)
  return inner === record[token] ? value : { ...record, [token]: inner }
}

/**
 * A call's fingerprint (SPEC sections 6 and 15): from the canonical text of
 * its arguments, unless its tool ignores some of them, in which case from
 * the arguments without those. A raw argument string that did not parse is
 * fingerprinted as it is.
 */
export function callFingerprint (toolName: string, ignored: ReadonlyArray<readonly string[]> | undefined, args: unknown, canonicalArgs: string): string {
  if (ignored === undefined || ignored.length === 0 || args === null || typeof args !== 'object') return fingerprintOfText(toolName, canonicalArgs)
  return fingerprint(toolName, withoutIgnored(args, ignored))
}
