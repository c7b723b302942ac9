/**
 * Tool names as model APIs take them (SPEC section 16, note to section 11):
 * OpenAI, Anthropic and Gemini accept `^[A-Za-z0-9_-]{1,64}$`, while a
 * toolgate tool's name may hold dots. A tool whose name does not fit is
 * offered under a mapped name, the same for the same set of names on every
 * replica, and a call under that name reaches the tool. The provider-format
 * tool lists use this, and so can an MCP server's `tools/list`.
 */
import { createHash } from 'node:crypto'

/** The longest name the model APIs accept. */
const MAX_LENGTH = 64
/** Hex digits of the name's hash in a mapped name; longer ones only if a shorter one clashes. */
const HASH_LENGTHS = [8, 16, 32, 56] as const

/** Whether the model APIs accept `name` as a tool name. */
export function fitsModelApis (name: string): boolean {
  return /^[A-Za-z0-9_-]{1,64}$/.test(name)
}

/**
 * The offered name of every name that does not fit, by its own name: the
 * characters the APIs refuse turned into `_`, then `_` and the start of the
 * name's SHA-256 (hex), cut to 64 characters. Unique among themselves and
 * against `taken` (every name and alias that calls resolve by): a mapped
 * name that would clash takes a longer hash. Names that fit are not in the
 * map: they are offered as they are.
 */
export function modelToolNames (names: Iterable<string>, taken: ReadonlySet<string>): Map<string, string> {
  const mapped = new Map<string, string>()
  const used = new Set(taken)
  // Sorted, so that which of two clashing names takes the longer hash does not depend on the order they came in.
  for (const name of [...names].filter((n) => !fitsModelApis(n)).sort()) {
    const base = name.replace(/[^A-Za-z0-9_-]/g, '_')
    const hash = createHash('sha256').update(name).digest('hex')
    let offered = ''
    for (const length of HASH_LENGTHS) {
      offered = `${base.slice(0, MAX_LENGTH - 1 - length)}_${hash.slice(0, length)}`
      if (!used.has(offered)) break
    }
    used.add(offered)
    mapped.set(name, offered)
  }
  return mapped
}
