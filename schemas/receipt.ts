import { Type } from '@sinclair/typebox'

export const Receipt = Type.Object({
  operationId: Type.String(),
  runId: Type.String(),
  batchId: Type.String(),
  callId: Type.String(),
  tool: Type.String(),
  intent: Type.Object({ action: Type.String(), arguments: Type.Object({}, { additionalProperties: true }) }),
  status: Type.Union([Type.Literal('committed'), Type.Literal('rejected'), Type.Literal('failed'), Type.Literal('uncertain')]),
  result: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
  stateRevision: Type.Union([Type.String(), Type.Number(), Type.Null()]),
  timeline: Type.Array(Type.Object({ event: Type.String(), at: Type.String() })),
  dispatch: Type.Object({ disposition: Type.Union([Type.Literal('dispatched'), Type.Literal('replayed'), Type.Literal('recovered'), Type.Literal('resolved')]), attempts: Type.Integer() }),
  timing: Type.Object({ dispatchedAt: Type.String(), completedAt: Type.String(), durationMs: Type.Number() })
}, { $id: 'Receipt' })

export const ReceiptList = Type.Object({ receipts: Type.Array(Type.Ref('Receipt')) })
export const OperationIdParams = Type.Object({ operationId: Type.String({ minLength: 1, maxLength: 128 }) })
