/** Costly schemas shared by the cost-model tests and the hostile suite. */

/** `depth` definitions, each an anyOf of `width` references to the next: width^depth subschemas once expanded, a few hundred bytes written. */
export function branchingRefs (depth: number, width = 2): Record<string, unknown> {
  const defs: Record<string, unknown> = {}
  for (let i = 0; i < depth; i++) defs[`a${i}`] = { anyOf: Array.from({ length: width }, () => ({ $ref: `#/$defs/a${i + 1}` })) }
  defs[`a${depth}`] = { type: 'object', required: ['w'] }
  return { $defs: defs, $ref: '#/$defs/a0' }
}

/** An object schema of `n` string properties. */
export function manyProperties (n: number): Record<string, unknown> {
  const properties: Record<string, unknown> = {}
  for (let i = 0; i < n; i++) properties[`p${i}`] = { type: 'string' }
  return { type: 'object', properties }
}
