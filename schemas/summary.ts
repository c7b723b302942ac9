import { Type } from '@sinclair/typebox'

/** A performance summary, per run (with runId and state) or across runs (with since and runs). */
export const Summary = Type.Object({
  runId: Type.Optional(Type.String()),
  state: Type.Optional(Type.String()),
  since: Type.Optional(Type.String()),
  runs: Type.Optional(Type.Integer()),
  turns: Type.Integer(),
  calls: Type.Integer(),
  callsByStatus: Type.Record(Type.String(), Type.Integer()),
  epochs: Type.Integer(),
  largestEpoch: Type.Integer(),
  toolTimeMs: Type.Number(),
  wallTimeMs: Type.Number(),
  timeSavedMs: Type.Number({ description: 'Time in tools minus wall time: what overlapping saved.' }),
  repeatAdvisories: Type.Integer(),
  repeatTerminations: Type.Integer(),
  projectionFailures: Type.Integer(),
  uncertainWrites: Type.Integer(),
  blockedCalls: Type.Integer(),
  approvals: Type.Object({ approved: Type.Integer(), denied: Type.Integer(), expired: Type.Integer() }, { description: 'Decisions on calls held for a person.' })
}, { $id: 'Summary' })
