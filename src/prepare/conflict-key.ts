/**
 * Conflict keys (SPEC section 2, `conflictKey`; section 5, step 5): a
 * template compiled once at registration, resolved against each call's
 * prepared arguments.
 */
import { canonicalJson } from '../model/json.js'
import type { ConflictKeyPart } from '../model/tool.js'
import { formatPointer, getAtPointer, parsePointer } from '../model/json-pointer.js'
import type { StageResult } from './types.js'

/**
 * Compiles a template such as `tile:{/x}:{/y}`: every `{` opens a JSON
 * pointer that runs to the next `}`; all other text (a lone `}` included) is
 * literal. There is no escape: `{{` is not special. Throws an Error naming
 * the template when a `{` is never closed or a pointer is not RFC 6901.
 */
export function compileConflictKey (template: string): ConflictKeyPart[] {
  const parts: ConflictKeyPart[] = []
  let literal = ''
  let i = 0
  while (i < template.length) {
    const open = template.indexOf('{', i)
    if (open < 0) {
      literal += template.slice(i)
      break
    }
    literal += template.slice(i, open)
    const close = template.indexOf('}', open + 1)
    if (close < 0) {
      throw new Error(`conflict key ${JSON.stringify(template)}: the "{" at position ${open} is never closed`)
    }
    const pointer = template.slice(open + 1, close)
    if (!pointer.startsWith('/')) {
      throw new Error(`conflict key ${JSON.stringify(template)}: ${JSON.stringify(pointer)} at position ${open} is not a JSON pointer starting with "/"`)
    }
    let tokens: string[]
    try {
      tokens = parsePointer(pointer)
    } catch (err) {
      throw new Error(`conflict key ${JSON.stringify(template)}: ${(err as Error).message}`)
    }
    if (literal !== '') parts.push({ literal })
    literal = ''
    parts.push({ pointer: tokens })
    i = close + 1
  }
  if (literal !== '') parts.push({ literal })
  return parts
}

function keyText (value: unknown): string {
  switch (typeof value) {
    case 'string': return value
    case 'number':
    case 'boolean': return String(value)
    // JSON with members sorted (RFC 8785): objects that differ only in key order get the same key, and so never overlap.
    default: return canonicalJson(value)
  }
}

/**
 * Replaces each pointer of a compiled template by the value it reaches in
 * the arguments: strings as they are, numbers and booleans by String(),
 * anything else as JSON with sorted keys. A pointer that reaches nothing (or
 * undefined) is `conflict_key_unresolved`, named in the message; values
 * never are.
 */
export function resolveConflictKey (parts: readonly ConflictKeyPart[], args: Record<string, unknown>): StageResult<string> {
  let key = ''
  for (const part of parts) {
    if ('literal' in part) {
      key += part.literal
      continue
    }
    const found = getAtPointer(args, part.pointer)
    if (!found.found || found.value === undefined) {
      return {
        ok: false,
        reason: 'conflict_key_unresolved',
        message: `the conflict key pointer ${formatPointer(part.pointer)} resolves to nothing in the arguments`
      }
    }
    key += keyText(found.value)
  }
  return { ok: true, value: key }
}
