import { Type } from '@sinclair/typebox'

const Detections = Type.Object({ advisories: Type.Integer(), terminations: Type.Integer() })

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
  loopDetections: Type.Object({ exact: Detections, cycle: Detections, errors: Detections, no_progress: Detections }, { description: 'Advisories and terminations of each loop kind; exact equals repeatAdvisories and repeatTerminations' }),
  projectionFailures: Type.Integer(),
  uncertainWrites: Type.Integer(),
  blockedCalls: Type.Integer(),
  approvals: Type.Object({ approved: Type.Integer(), denied: Type.Integer(), expired: Type.Integer() }, { description: 'Decisions on calls held for a person.' })
}, { $id: 'Summary' })
