/**
 * What a TypeBox check finds wrong in a definition (a tool, an MCP server),
 * said once per place: TypeBox reports a missing property both as missing
 * and as of the wrong type, and a union only as "Expected union value";
 * here a place gets its first problem, and a union of constants names the
 * values it allows.
 */
import type { TSchema } from '@sinclair/typebox'
import type { TypeCheck } from '@sinclair/typebox/compiler'

/** The most problems one definition lists. */
const MAX_PROBLEMS = 20

/** `path: message` for each place of `input` the check refuses, in TypeBox's order, each place once. */
export function schemaProblems (check: TypeCheck<TSchema>, input: unknown): string[] {
  const seen = new Set<string>()
  const problems: string[] = []
  for (const e of check.Errors(input)) {
    if (seen.has(e.path)) continue
    seen.add(e.path)
    problems.push(`${e.path === '' ? '(definition)' : e.path}: ${allowedValues(e.schema) ?? e.message}`)
    if (problems.length === MAX_PROBLEMS) break
  }
  return problems
}

/** Whether a problem was found at `path` or inside it: the checks that read that place have nothing to read. */
export function problemAt (problems: readonly string[], path: string): boolean {
  return problems.some((p) => p.startsWith(`${path}:`) || p.startsWith(`${path}/`))
}

/** "must be one of …" for a union of constants (an enum), else undefined. */
function allowedValues (schema: TSchema): string | undefined {
  const members = (schema as { anyOf?: unknown }).anyOf
  if (!Array.isArray(members) || members.length === 0 || !members.every((m) => m !== null && typeof m === 'object' && 'const' in m)) return undefined
  return `must be one of ${members.map((m) => JSON.stringify((m as { const: unknown }).const)).join(', ')}`
}
