import { createHash } from 'node:crypto'
import { canonicalJson } from '../model/json.js'
import type { ToolPin } from '../store/tool-pins.js'
import type { ListedTool } from './import.js'

/**
 * Pinning (SPEC §18): what of a listed tool is pinned, its hash, and a
 * readable account of what differs between a pin and what the server lists
 * now.
 */

/** The fields of a listed tool that are pinned: name, title, description, inputSchema, outputSchema, annotations. */
export function pinnedDefinition (tool: ListedTool): Record<string, unknown> {
  const def: Record<string, unknown> = { name: tool.name, inputSchema: tool.inputSchema }
  if (tool.title !== undefined) def.title = tool.title
  if (tool.description !== undefined) def.description = tool.description
  if (tool.outputSchema !== undefined) def.outputSchema = tool.outputSchema
  if (tool.annotations !== undefined) def.annotations = tool.annotations
  return def
}

/** A pin of the tool as listed now. */
export function pinOf (tool: ListedTool, now: number): ToolPin {
  const definition = pinnedDefinition(tool)
  return { hash: createHash('sha256').update(canonicalJson(definition)).digest('hex'), definition, pinnedAt: now }
}

/** Longest text quoted in a change. */
const MAX_QUOTE = 120
/** Changes listed per tool; the rest are counted. */
const MAX_CHANGES = 20

/**
 * What differs between a pinned definition and the current one, in words:
 * the description or title text, each schema keyword added, removed or
 * changed (by JSON pointer), each annotation flipped.
 */
export function changesBetween (pinned: Record<string, unknown>, current: Record<string, unknown>): string[] {
  const changes: string[] = []
  for (const field of ['title', 'description'] as const) {
    if (pinned[field] !== current[field]) changes.push(`${field} changed from ${quote(pinned[field])} to ${quote(current[field])}`)
  }
  for (const field of ['inputSchema', 'outputSchema'] as const) diffSchema(field, pinned[field], current[field], changes)
  const before = record(pinned.annotations)
  const after = record(current.annotations)
  for (const key of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    if (!same(before[key], after[key])) changes.push(`annotation ${key} changed from ${quote(before[key])} to ${quote(after[key])}`)
  }
  if (changes.length <= MAX_CHANGES) return changes
  return [...changes.slice(0, MAX_CHANGES), `and ${changes.length - MAX_CHANGES} more changes`]
}

function diffSchema (field: string, before: unknown, after: unknown, out: string[], pointer = ''): void {
  if (out.length > MAX_CHANGES) return
  const a = record(before)
  const b = record(after)
  if (!isRecord(before) || !isRecord(after)) {
    if (!same(before, after)) out.push(`${field}${pointer || ''} changed from ${quote(before)} to ${quote(after)}`)
    return
  }
  for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    const at = `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`
    if (!(key in a)) out.push(`${field} keyword ${at} added: ${quote(b[key])}`)
    else if (!(key in b)) out.push(`${field} keyword ${at} removed (was ${quote(a[key])})`)
    else if (isRecord(a[key]) && isRecord(b[key])) diffSchema(field, a[key], b[key], out, at)
    else if (!same(a[key], b[key])) out.push(`${field} keyword ${at} changed from ${quote(a[key])} to ${quote(b[key])}`)
  }
}

/** Whether two JSON values (either may be absent) are the same. */
function same (a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b
  return canonicalJson(a) === canonicalJson(b)
}

function quote (value: unknown): string {
  if (value === undefined) return '(none)'
  const text = JSON.stringify(value)
  return text.length > MAX_QUOTE ? `${text.slice(0, MAX_QUOTE)}…` : text
}

function record (value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {}
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
