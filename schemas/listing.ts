import { Type, type Static } from '@sinclair/typebox'
import { BatchIdPattern } from './batch.js'
import { RunIdPattern } from './common.js'

/** Most items one page of a list answers. */
export const MAX_PAGE = 500

export const RunListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 50, description: 'Most runs in the page.' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'The `next` of the previous page.' })),
  state: Type.Optional(Type.Union(['active', 'terminated', 'cancelled', 'ended'].map((s) => Type.Literal(s)), { description: 'Only runs in this state.' }))
}, { additionalProperties: false })
export type RunListQuery = Static<typeof RunListQuery>

export const RunList = Type.Object({
  runs: Type.Array(Type.Ref('Run')),
  next: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page.' })
})

export const BatchListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 100, description: 'Most batches in the page.' })),
  beforeTurn: Type.Optional(Type.Integer({ minimum: 1, description: 'Only batches of earlier turns (the `next` of the previous page).' }))
}, { additionalProperties: false })
export type BatchListQuery = Static<typeof BatchListQuery>

export const BatchListItem = Type.Object({
  batchId: Type.String(),
  state: Type.String({ description: '`completed`, or `running` (`awaiting_approval` while it waits for a person) for the batch in flight (listed first, on the first page).' }),
  turn: Type.Optional(Type.Integer()),
  calls: Type.Optional(Type.Integer({ description: 'How many calls the batch had.' })),
  statuses: Type.Optional(Type.Record(Type.String(), Type.Integer(), { description: 'Its calls counted by result status.' })),
  completedAt: Type.Optional(Type.String())
})

export const BatchList = Type.Object({
  batches: Type.Array(BatchListItem),
  next: Type.Union([Type.Integer(), Type.Null()], { description: 'Pass as `beforeTurn` for the next page; null on the last page.' })
})

export const BatchParams = Type.Object({
  runId: Type.String({ pattern: RunIdPattern }),
  batchId: Type.String({ pattern: BatchIdPattern })
})

/** A batch of the run that has not finished yet. */
export const BatchInProgress = Type.Object({
  runId: Type.String(),
  batchId: Type.String(),
  state: Type.String({ description: '`running`.' })
})
