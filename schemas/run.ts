import { type TInteger, type TOptional, Type, type Static } from '@sinclair/typebox'
import { LOOP_KIND_LIST } from '../src/repeat/kinds/index.js'
import { type LoopKinds, MAX_LOOP_LIMIT, loopLimitSettings } from '../src/repeat/loops.js'
import { RunIdPattern, ToolNamePattern } from './common.js'
import { terminationReasons } from './run-states.js'
import { stringEnum } from './responses.js'

const Threshold = Type.Integer({ minimum: 0, maximum: MAX_LOOP_LIMIT })
const Limit = Type.Union([Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), Type.Null()])

const Mode = Type.Union([Type.Literal('sequential'), Type.Literal('safeParallel'), Type.Literal('parallel')])
const Audience = Type.Union([Type.Literal('stock'), Type.Literal('lifecycle')])
const Counters = Type.Object({ turns: Type.Integer(), toolCalls: Type.Integer(), totalTokens: Type.Integer() })

/** Each loop kind's two limits, in the kinds' order, as the run options take them (optional) and the run object shows them. */
function loopLimitFields (kinds: LoopKinds): { options: Record<string, TOptional<TInteger>>, shown: Record<string, TInteger> } {
  const options: Record<string, TOptional<TInteger>> = {}
  const shown: Record<string, TInteger> = {}
  for (const { name } of loopLimitSettings(kinds)) {
    options[name] = Type.Optional(Threshold)
    shown[name] = Type.Integer()
  }
  return { options, shown }
}

/** The run's schemas for a list of loop kinds: the registered ones (below), or a test's. */
export function runSchemas (kinds: LoopKinds) {
  const loops = loopLimitFields(kinds)
  const RunLimits = Type.Object({
    exactToolRepeatAdvisoryThreshold: Type.Optional(Threshold),
    exactToolRepeatTerminationThreshold: Type.Optional(Threshold),
    maxTurns: Type.Optional(Limit),
    maxToolCalls: Type.Optional(Limit),
    timeoutMs: Type.Optional(Limit),
    maxTotalTokens: Type.Optional(Limit),
    ...loops.options
  }, { additionalProperties: false })

  /** POST /v1/runs; every field optional. */
  const CreateRunBody = Type.Object({
    runId: Type.Optional(Type.String({ pattern: RunIdPattern })),
    toolExecution: Type.Optional(Mode),
    maxConcurrentTools: Type.Optional(Type.Integer({ minimum: 1, maximum: 256 })),
    limits: Type.Optional(RunLimits),
    tools: Type.Optional(Type.Union([Type.Array(Type.String({ pattern: ToolNamePattern }), { maxItems: 1024, uniqueItems: true }), Type.Null()])),
    events: Type.Optional(Audience),
    metadata: Type.Optional(Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 4096 }), { maxProperties: 64 }))
  }, { additionalProperties: false })

  /** The run object, with every effective option filled in. */
  const Run = Type.Object({
    runId: Type.String(),
    state: Type.Union([Type.Literal('active'), Type.Literal('terminated'), Type.Literal('cancelled'), Type.Literal('ended')]),
    terminationReason: Type.Optional(stringEnum(terminationReasons(kinds))),
    toolExecution: Mode,
    maxConcurrentTools: Type.Integer(),
    limits: Type.Object({
      exactToolRepeatAdvisoryThreshold: Type.Integer(),
      exactToolRepeatTerminationThreshold: Type.Integer(),
      maxTurns: Type.Union([Type.Integer(), Type.Null()]),
      maxToolCalls: Type.Union([Type.Integer(), Type.Null()]),
      timeoutMs: Type.Union([Type.Integer(), Type.Null()]),
      maxTotalTokens: Type.Union([Type.Integer(), Type.Null()]),
      ...loops.shown
    }),
    tools: Type.Union([Type.Array(Type.String()), Type.Null()]),
    events: Audience,
    metadata: Type.Record(Type.String(), Type.String()),
    counters: Counters,
    createdAt: Type.String({ format: 'date-time' }),
    lastActiveAt: Type.String({ format: 'date-time', description: 'When the run was last changed: created, a batch, a decision, a message, cancelled or ended.' }),
    expiresAt: Type.String({ format: 'date-time' })
  }, { $id: 'Run' })

  return { RunLimits, CreateRunBody, Run }
}

export const { RunLimits, CreateRunBody, Run } = runSchemas(LOOP_KIND_LIST)

/** POST /v1/runs' body as decoded: the loop kinds' limits are there by their names. */
export type CreateRunInput = Omit<Static<typeof CreateRunBody>, 'limits'> & {
  limits?: Static<typeof RunLimits> & { readonly [loopLimit: string]: number | null | undefined }
}

export const MessageBody = Type.Object({
  kind: Type.Union([Type.Literal('steering'), Type.Literal('follow_up')])
}, { additionalProperties: true })
