import { Type } from '@sinclair/typebox'
import { formatNames } from '../src/formats/index.js'
import { ToolNamePattern } from './common.js'

const Pointer = Type.String({ pattern: '^(/.*)?$', description: 'RFC 6901 JSON pointer' })

export const RewriteRule = Type.Union([
  Type.Object({ op: Type.Literal('set'), path: Pointer, value: Type.Unknown() }, { additionalProperties: false }),
  Type.Object({ op: Type.Literal('default'), path: Pointer, value: Type.Unknown() }, { additionalProperties: false }),
  Type.Object({ op: Type.Literal('remove'), path: Pointer }, { additionalProperties: false }),
  Type.Object({ op: Type.Literal('clamp'), path: Pointer, min: Type.Optional(Type.Number()), max: Type.Optional(Type.Number()) }, { additionalProperties: false })
])

/** A tool definition (SPEC section 2). */
export const ToolDefinition = Type.Object({
  name: Type.String({ pattern: ToolNamePattern }),
  description: Type.Optional(Type.String({ maxLength: 8192 })),
  inputSchema: Type.Object({}, { additionalProperties: true, description: 'JSON Schema draft 2020-12 of the arguments' }),
  executor: Type.Object({
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 3_600_000, default: 30000 })),
    maxTimeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 36_000_000, description: "Longest a call may take in all while its executor's progress reports reset timeoutMs (an MCP server's tools); default 10 times timeoutMs" })),
    statusUrl: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'asked GET ?operationId=<id> for the outcome of an uncertain write' }))
  }, { additionalProperties: false }),
  readOnly: Type.Optional(Type.Boolean({ default: false })),
  idempotent: Type.Optional(Type.Boolean({ default: false, description: 'the executor applies a call once per Idempotency-Key, so a retry of an uncertain write is sent under the original one' })),
  execution: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('parallel'), Type.Literal('sequential')], { default: 'auto' })),
  conflictKey: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  conflictScope: Type.Optional(Type.Union([Type.Literal('run'), Type.Literal('tenant')], { default: 'run', description: 'run: the conflict key keeps calls of one batch apart; tenant: no two calls with the same key run at once in any run of the tenant, on any replica (docs/scheduling.md)' })),
  conflictWaitMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000, default: 30000, description: 'How long a call waits for its tenant-scoped key held elsewhere before it is blocked (conflict_key_busy)' })),
  trackExactRepeats: Type.Optional(Type.Boolean({ default: true })),
  ignoreArguments: Type.Optional(Type.Array(Pointer, { maxItems: 64, uniqueItems: true, description: 'Members left out of the fingerprint (repeat and loop detection, operation ids); the executor still receives them' })),
  aliases: Type.Optional(Type.Array(Type.String({ pattern: ToolNamePattern }), { maxItems: 64, uniqueItems: true })),
  argumentAliases: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ minLength: 1, maxLength: 256 }))),
  rewrite: Type.Optional(Type.Array(RewriteRule, { maxItems: 256 })),
  requiredScopes: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { maxItems: 64 })),
  requiresApproval: Type.Optional(Type.Boolean({ default: false, description: 'A person approves each call before it runs; nothing of its batch runs before that.' })),
  action: Type.Optional(Type.Object({
    projection: Type.Optional(Type.String({ minLength: 1, maxLength: 65536 })),
    maxModelReceiptChars: Type.Optional(Type.Integer({ minimum: 2, maximum: 1_048_576, default: 4096 }))
  }, { additionalProperties: false }))
}, { $id: 'ToolDefinition', additionalProperties: false })


/** PUT body: the name may be left out (it comes from the path). */
export const ToolPutBody = Type.Composite([
  Type.Omit(ToolDefinition, ['name']),
  Type.Object({ name: Type.Optional(Type.String({ pattern: ToolNamePattern })) })
], { additionalProperties: false })

export const ToolList = Type.Object({ tools: Type.Array(Type.Ref('ToolDefinition')) })

/** What the model is offered: no executor, rewrite rules or projections. */
export const OfferedTool = Type.Object({
  name: Type.String(),
  description: Type.String(),
  inputSchema: Type.Object({}, { additionalProperties: true })
})
export const OfferedToolList = Type.Object({ tools: Type.Array(OfferedTool) })

/** The same tools in a provider's tool-definition shape (SPEC section 11). */
export const ProviderToolList = Type.Object({
  tools: Type.Array(Type.Object({}, { additionalProperties: true }), { description: "In the requested provider's shape, ready to pass as its request's `tools`." })
})

export const ToolListQuery = Type.Object({
  format: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: [...formatNames], description: "A provider format: answer the tools in that provider's tool-definition shape." }))
})

export const ToolNameParams = Type.Object({ name: Type.String({ pattern: ToolNamePattern }) })
