import { type TObject, Type } from '@sinclair/typebox'
import { LOOP_KIND_LIST } from '../src/repeat/kinds/index.js'
import { type LoopKinds, loopKindNames } from '../src/repeat/loops.js'

const Detections = Type.Object({ advisories: Type.Integer(), terminations: Type.Integer() })

/** Each loop kind's detections, `exact` first, then the kinds in their order. */
export function loopDetectionsSchema (kinds: LoopKinds): TObject {
  return Type.Object(Object.fromEntries(loopKindNames(kinds).map((name) => [name, Detections])), {
    description: 'Advisories and terminations of each loop kind; exact equals repeatAdvisories and repeatTerminations'
  })
}

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
  loopDetections: loopDetectionsSchema(LOOP_KIND_LIST),
  projectionFailures: Type.Integer(),
  uncertainWrites: Type.Integer(),
  blockedCalls: Type.Integer(),
  approvals: Type.Object({ approved: Type.Integer(), denied: Type.Integer(), expired: Type.Integer() }, { description: 'Decisions on calls held for a person.' })
}, { $id: 'Summary' })
