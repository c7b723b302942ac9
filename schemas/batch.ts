import { type TOptional, type TSchema, Type } from '@sinclair/typebox'
import { providerBodySchemas } from '../src/formats/index.js'
import { EVENT_TYPES, RUN_STATES, TERMINATION_REASONS } from './run-states.js'
import { LOOP_KIND_LIST } from '../src/repeat/kinds/index.js'
import { loopKindNames, spokenList } from '../src/repeat/loops.js'
import { stringEnum } from './responses.js'

export const BatchIdPattern = '^[A-Za-z0-9_.:-]{1,128}$'

export const Call = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 256 }),
  name: Type.String({ minLength: 1, maxLength: 256 }),
  arguments: Type.Optional(Type.Union([
    Type.String({ description: 'JSON text, as OpenAI-style APIs send it' }),
    Type.Object({}, { additionalProperties: true, description: 'an object, as Anthropic-style APIs send it' }),
    Type.Null()
  ]))
}, { additionalProperties: false })

export const Usage = Type.Object({
  inputTokens: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
  outputTokens: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }))
}, { additionalProperties: false })

/**
 * POST /v1/runs/{runId}/batches: exactly one of `calls` or a provider field
 * (checked by the route: a schema's oneOf would answer a riddle). A batch may
 * hold at most TOOLGATE_MAX_CALLS_PER_BATCH calls.
 */
export const BatchBody = Type.Object({
  batchId: Type.Optional(Type.String({ pattern: BatchIdPattern })),
  calls: Type.Optional(Type.Array(Call)),
  ...providerFields(),
  usage: Type.Optional(Usage)
}, { additionalProperties: false, description: 'Exactly one of `calls`, `openaiChat`, `openaiResponses`, `anthropic` or `gemini`. Unknown fields inside a provider object are accepted.' })

function providerFields (): Record<string, TOptional<TSchema>> {
  return Object.fromEntries(Object.entries(providerBodySchemas).map(([name, schema]) => [name, Type.Optional(schema)]))
}

export const BatchHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ pattern: BatchIdPattern }))
})

const Details = Type.Object({
  epoch: Type.Optional(Type.Integer()),
  durationMs: Type.Optional(Type.Number()),
  startedAt: Type.Optional(Type.String()),
  reason: Type.Optional(Type.String()),
  message: Type.Optional(Type.String()),
  blockedBy: Type.Optional(Type.String()),
  blockedByOperation: Type.Optional(Type.String()),
  blockedByRun: Type.Optional(Type.String()),
  conflictKey: Type.Optional(Type.String({ description: "The call's conflict key as filled from its prepared arguments: calls with the same key never overlap." })),
  waited: Type.Optional(Type.Object({
    for: Type.Union([Type.Literal('slot'), Type.Literal('conflict_key')]),
    callId: Type.Optional(Type.String({ description: 'With `conflict_key`: the call that held the key.' }))
  }, { description: 'Why the call started after its epoch began: every slot (`maxConcurrentTools`) was taken, or a running call held its conflict key.' })),
  tool: Type.Optional(Type.String()),
  httpStatus: Type.Optional(Type.Integer()),
  cause: Type.Optional(Type.String()),
  operationId: Type.Optional(Type.String()),
  executor: Type.Optional(Type.Object({}, { additionalProperties: true })),
  receipt: Type.Optional(Type.Ref('Receipt')),
  projectionProblem: Type.Optional(Type.String()),
  approval: Type.Optional(Type.Object({
    decision: Type.Union([Type.Literal('approved'), Type.Literal('denied'), Type.Literal('expired')]),
    at: Type.String(),
    by: Type.Optional(Type.Object({ tenant: Type.String(), name: Type.Optional(Type.String()) }, { description: "Who decided: the tenant and the key's name, never the key." })),
    reason: Type.Optional(Type.String()),
    edited: Type.Optional(Type.Boolean()),
    arguments: Type.Optional(Type.Object({
      original: Type.Object({}, { additionalProperties: true }),
      edited: Type.Unknown()
    }, { description: 'With `edited`: the arguments as held and as the approver\'s edit made them (prepared, or as far as preparation got). Never logged.' }))
  }, { description: 'The decision on a call held for approval.' }))
}, { additionalProperties: true })

export const CallResult = Type.Object({
  callId: Type.String(),
  name: Type.String(),
  status: Type.Union(['ok', 'error', 'rejected', 'uncertain', 'blocked', 'cancelled', 'terminated', 'projection_failed', 'denied'].map((s) => Type.Literal(s))),
  content: Type.String(),
  isError: Type.Boolean(),
  details: Details
})

export const BatchEvent = Type.Object({
  seq: Type.Integer(),
  type: stringEnum(EVENT_TYPES),
  at: Type.String(),
  callId: Type.Optional(Type.String()),
  tool: Type.Optional(Type.String()),
  epoch: Type.Optional(Type.Integer()),
  status: Type.Optional(Type.String()),
  durationMs: Type.Optional(Type.Number()),
  action: Type.Optional(Type.String()),
  kind: Type.Optional(Type.String({ description: `tool.repeat_detected: ${spokenList(loopKindNames(LOOP_KIND_LIST))}` })),
  count: Type.Optional(Type.Integer()),
  progress: Type.Optional(Type.Number({ description: "call.progress: the executor's progress so far (an MCP server's notifications/progress)" })),
  total: Type.Optional(Type.Number({ description: 'call.progress: the total, when the executor knows one' })),
  reason: Type.Optional(Type.String()),
  size: Type.Optional(Type.Integer())
})

/** A call held for a person's decision (SPEC section 13); `arguments` are the prepared ones. */
export const PendingApproval = Type.Object({
  callId: Type.String(),
  tool: Type.String(),
  arguments: Type.Object({}, { additionalProperties: true }),
  requestedAt: Type.String(),
  expiresAt: Type.String(),
  blockedBy: Type.Optional(Type.String({ description: 'The call retries a write whose outcome is still unknown (this operation id): approved, it is `blocked`, not run, until that write is resolved (`POST /v1/receipts/{operationId}/resolve`).' }))
})

export const BatchResponse = Type.Object({
  runId: Type.String(),
  batchId: Type.String(),
  turn: Type.Integer(),
  state: Type.Optional(Type.Union([Type.Literal('completed'), Type.Literal('awaiting_approval')], {
    description: '`awaiting_approval` (answered 202) while calls wait for a decision; then `results` holds only the rejections.'
  })),
  approvals: Type.Optional(Type.Array(PendingApproval, { description: 'While awaiting approval: each call still waiting for a decision.' })),
  results: Type.Array(CallResult),
  events: Type.Array(BatchEvent),
  policyMessages: Type.Array(Type.Object({ type: Type.Literal('agent_policy'), content: Type.String() })),
  continue: Type.Boolean(),
  run: Type.Object({ state: stringEnum(RUN_STATES), terminationReason: Type.Optional(stringEnum(TERMINATION_REASONS)) }),
  messages: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }), {
    description: 'Only when the batch came in a provider format: what to append to the conversation before the next model request, in that format (tool results in source order, then one item per policy message).'
  }))
}, { $id: 'BatchResponse' })
