/**
 * RFC 6901 JSON pointers: parsing, formatting and reading. Shared by the
 * rewrite stage, conflict keys and anyone else that addresses arguments.
 */

const ARRAY_INDEX = /^(0|[1-9]\d*)$/

/** The result of reading a pointer: `found` is false when a token leads nowhere. */
export type PointerLookup = { found: true, value: unknown } | { found: false, value?: undefined }

/**
 * Splits a pointer into its unescaped reference tokens ("" is the whole
 * document). Throws an Error naming the pointer when it is not RFC 6901.
 */
export function parsePointer (pointer: string): string[] {
  if (pointer === '') return []
  if (pointer[0] !== '/') {
    throw new Error(`JSON pointer ${JSON.stringify(pointer)} must be empty or start with "/"`)
  }
  const tokens = pointer.slice(1).split('/')
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as string
    if (!token.includes('~')) continue
    if (/~(?![01])/.test(token)) {
      throw new Error(`JSON pointer ${JSON.stringify(pointer)} has a "~" not followed by 0 or 1`)
    }
    // ~1 first, then ~0, so that "~01" reads as "~1" (RFC 6901 section 4)
    tokens[i] = token.replaceAll('~1', '/').replaceAll('~0', '~')
  }
  return tokens
}

/** Turns reference tokens back into a pointer string, escaping "~" and "/". */
export function formatPointer (tokens: readonly string[]): string {
  let out = ''
  for (const token of tokens) out += '/' + token.replaceAll('~', '~0').replaceAll('/', '~1')
  return out
}

/** The array position a token names, or -1 when it is not a canonical index. */
export function arrayIndex (token: string): number {
  return ARRAY_INDEX.test(token) ? Number(token) : -1
}

/**
 * Reads the value at `tokens`. Only own properties of objects and existing
 * indexes of arrays are followed, never the prototype chain.
 */
export function getAtPointer (value: unknown, tokens: readonly string[]): PointerLookup {
  let current = value
  for (const token of tokens) {
    if (Array.isArray(current)) {
      const i = arrayIndex(token)
      if (i < 0 || i >= current.length) return { found: false }
      current = current[i]
    } else if (current !== null && typeof current === 'object' && Object.hasOwn(current, token)) {
      current = (current as Record<string, unknown>)[token]
    } else {
      return { found: false }
    }
  }
  return { found: true, value: current }
}
