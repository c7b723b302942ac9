/**
 * Names a model API accepts (`^[A-Za-z0-9_-]{1,64}$`) for the tools an MCP
 * client is offered (SPEC section 16, note to section 11). A tool whose own
 * name fits keeps it; another gets a deterministic mapped one, and a call
 * under that name reaches the tool.
 */
import { createHash } from 'node:crypto'

const SAFE = /^[A-Za-z0-9_-]{1,64}$/

/** The offered name of each tool, unique within the list: own names first, mapped names after. */
export function modelSafeNames (names: readonly string[]): Map<string, string> {
  const out = new Map<string, string>()
  const taken = new Set<string>()
  for (const name of names) {
    if (SAFE.test(name)) {
      out.set(name, name)
      taken.add(name)
    }
  }
  for (const name of names) {
    if (out.has(name)) continue
    const base = name.replace(/[^A-Za-z0-9_-]/g, '_')
    let mapped = base.length <= 64 ? base : `${base.slice(0, 55)}_${createHash('sha256').update(name).digest('hex').slice(0, 8)}`
    for (let i = 0; taken.has(mapped); i++) {
      const suffix = `_${createHash('sha256').update(`${name}#${i}`).digest('hex').slice(0, 8)}`
      mapped = `${base.slice(0, 64 - suffix.length)}${suffix}`
    }
    out.set(name, mapped)
    taken.add(mapped)
  }
  return out
}
