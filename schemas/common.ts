import { Type, type TSchema } from '@sinclair/typebox'

/** RFC 9457 problem, as every error is answered. */
export const Problem = Type.Object({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  code: Type.String({ description: 'Stable error code; see the README for the catalogue.' }),
  detail: Type.Optional(Type.String()),
  instance: Type.Optional(Type.String())
}, { $id: 'Problem', additionalProperties: true, description: 'An RFC 9457 problem with a stable `code`.' })

export const ProblemRef = Type.Ref('Problem')

/** Problem responses keyed by status code, for route schemas. */
export function problems (...statuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {}
  for (const s of statuses) out[s] = ProblemRef
  return out
}

export const RunIdPattern = '^[A-Za-z0-9_.:-]{1,128}$'
export const ToolNamePattern = '^[A-Za-z0-9_.-]{1,64}$'

export const RunIdParams = Type.Object({ runId: Type.String({ pattern: RunIdPattern }) })
