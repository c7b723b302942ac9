import { Type, type Static } from '@sinclair/typebox'
import { RunIdPattern, ToolNamePattern } from './common.js'
import { TERMINATION_REASONS } from './run-states.js'
import { stringEnum } from './responses.js'

const Threshold = Type.Integer({ minimum: 0, maximum: 1_000_000 })
const Limit = Type.Union([Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), Type.Null()])

export const RunLimits = Type.Object({
  exactToolRepeatAdvisoryThreshold: Type.Optional(Threshold),
  exactToolRepeatTerminationThreshold: Type.Optional(Threshold),
  maxTurns: Type.Optional(Limit),
  maxToolCalls: Type.Optional(Limit),
  timeoutMs: Type.Optional(Limit),
  maxTotalTokens: Type.Optional(Limit),
  cycleAdvisoryRepetitions: Type.Optional(Threshold),
  cycleTerminationRepetitions: Type.Optional(Threshold),
  consecutiveErrorAdvisory: Type.Optional(Threshold),
  consecutiveErrorTermination: Type.Optional(Threshold),
  noProgressAdvisory: Type.Optional(Threshold),
  noProgressTermination: Type.Optional(Threshold)
}, { additionalProperties: false })

const Mode = Type.Union([Type.Literal('sequential'), Type.Literal('safeParallel'), Type.Literal('parallel')])
const Audience = Type.Union([Type.Literal('stock'), Type.Literal('lifecycle')])

/** POST /v1/runs; every field optional. */
export const CreateRunBody = Type.Object({
  runId: Type.Optional(Type.String({ pattern: RunIdPattern })),
  toolExecution: Type.Optional(Mode),
  maxConcurrentTools: Type.Optional(Type.Integer({ minimum: 1, maximum: 256 })),
  limits: Type.Optional(RunLimits),
  tools: Type.Optional(Type.Union([Type.Array(Type.String({ pattern: ToolNamePattern }), { maxItems: 1024, uniqueItems: true }), Type.Null()])),
  events: Type.Optional(Audience),
  metadata: Type.Optional(Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 4096 }), { maxProperties: 64 }))
}, { additionalProperties: false })

export type CreateRunInput = Static<typeof CreateRunBody>

const Counters = Type.Object({ turns: Type.Integer(), toolCalls: Type.Integer(), totalTokens: Type.Integer() })

/** The run object, with every effective option filled in. */
export const Run = Type.Object({
  runId: Type.String(),
  state: Type.Union([Type.Literal('active'), Type.Literal('terminated'), Type.Literal('cancelled'), Type.Literal('ended')]),
  terminationReason: Type.Optional(stringEnum(TERMINATION_REASONS)),
  toolExecution: Mode,
  maxConcurrentTools: Type.Integer(),
  limits: Type.Object({
    exactToolRepeatAdvisoryThreshold: Type.Integer(),
    exactToolRepeatTerminationThreshold: Type.Integer(),
    maxTurns: Type.Union([Type.Integer(), Type.Null()]),
    maxToolCalls: Type.Union([Type.Integer(), Type.Null()]),
    timeoutMs: Type.Union([Type.Integer(), Type.Null()]),
    maxTotalTokens: Type.Union([Type.Integer(), Type.Null()]),
    cycleAdvisoryRepetitions: Type.Integer(),
    cycleTerminationRepetitions: Type.Integer(),
    consecutiveErrorAdvisory: Type.Integer(),
    consecutiveErrorTermination: Type.Integer(),
    noProgressAdvisory: Type.Integer(),
    noProgressTermination: Type.Integer()
  }),
  tools: Type.Union([Type.Array(Type.String()), Type.Null()]),
  events: Audience,
  metadata: Type.Record(Type.String(), Type.String()),
  counters: Counters,
  createdAt: Type.String({ format: 'date-time' }),
  lastActiveAt: Type.String({ format: 'date-time', description: 'When the run was last changed: created, a batch, a decision, a message, cancelled or ended.' }),
  expiresAt: Type.String({ format: 'date-time' })
}, { $id: 'Run' })

export const MessageBody = Type.Object({
  kind: Type.Union([Type.Literal('steering'), Type.Literal('follow_up')])
}, { additionalProperties: true })
