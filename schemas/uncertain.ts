import { Type } from '@sinclair/typebox'

const Definitive = Type.Union([Type.Literal('committed'), Type.Literal('rejected'), Type.Literal('failed')])

/** POST /v1/receipts/{operationId}/resolve: an outcome given by hand, or a request to ask the status URL now. */
export const ResolveBody = Type.Union([
  Type.Object({
    status: Definitive,
    result: Type.Optional(Type.Object({}, { additionalProperties: true })),
    stateRevision: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Number()]))
  }, { additionalProperties: false }),
  Type.Object({ recheck: Type.Literal(true) }, { additionalProperties: false })
])

export const Resolution = Type.Object({
  operationId: Type.String(),
  runId: Type.String(),
  resolved: Type.Boolean(),
  how: Type.Optional(Type.Union([Type.Literal('manual'), Type.Literal('status_url')])),
  status: Type.Optional(Definitive),
  check: Type.Optional(Type.Union([Type.Literal('unknown'), Type.Literal('error'), Type.Literal('busy')], {
    description: 'why a recheck resolved nothing: the executor does not know yet, the question failed, or another replica is asking right now'
  })),
  cause: Type.Optional(Type.String()),
  receipt: Type.Optional(Type.Ref('Receipt'))
})

export const UncertainWrite = Type.Object({
  operationId: Type.String(),
  callId: Type.String(),
  batchId: Type.String(),
  tool: Type.String(),
  fingerprint: Type.String(),
  conflictKey: Type.Union([Type.String(), Type.Null()]),
  action: Type.Boolean({ description: 'an action tool: its receipt is uncertain too' }),
  since: Type.String({ description: 'when it was recorded (its batch finished), ISO 8601' })
})

export const UncertainList = Type.Object({ runId: Type.String(), uncertain: Type.Array(UncertainWrite) })

/** One unresolved uncertain write of the tenant (SPEC section 17). */
export const TenantUncertainWrite = Type.Object({
  operationId: Type.String(),
  runId: Type.String(),
  callId: Type.String(),
  tool: Type.String(),
  conflictKey: Type.Union([Type.String(), Type.Null()]),
  conflictScope: Type.Union([Type.Literal('run'), Type.Literal('tenant')], { description: 'tenant: the write blocks later writes with its conflict key from every run of the tenant until it is resolved' }),
  cause: Type.String({ description: 'why its outcome is unknown: the exchange\'s cause (`timeout`, `connection_closed`, …) or `replica_lost` (the replica sending it died)' }),
  since: Type.String({ description: 'when it was recorded, ISO 8601' })
})

export const TenantUncertainList = Type.Object({ uncertain: Type.Array(TenantUncertainWrite) })
