import { Type } from '@sinclair/typebox'
import { PendingApproval } from './batch.js'

export const Decision = Type.Object({
  callId: Type.String({ minLength: 1, maxLength: 256 }),
  approve: Type.Boolean(),
  reason: Type.Optional(Type.String({ maxLength: 2048, description: "A denial's reason: the model reads it." })),
  arguments: Type.Optional(Type.Union([
    Type.String({ description: 'JSON text' }),
    Type.Object({}, { additionalProperties: true })
  ], { description: "An approval's edited arguments: prepared again through every stage; failing makes the call `rejected`." })),
  content: Type.Optional(Type.Object({}, { additionalProperties: true, description: "Approving an MCP server's question (`elicitation`): the answer, matching its `requestedSchema`." }))
}, { additionalProperties: false })

/** POST /v1/runs/{runId}/batches/{batchId}/approvals */
export const DecisionsBody = Type.Object({
  decisions: Type.Array(Decision, { minItems: 1, maxItems: 10000 })
}, { additionalProperties: false })

const CallBrief = {
  callId: Type.String(),
  tool: Type.String(),
  status: Type.String()
}

/** Beside a held call, for the person deciding: never another call's arguments. */
const ApprovalContext = Type.Object({
  description: Type.Optional(Type.String({ description: "The tool's description." })),
  batch: Type.Array(Type.Object(CallBrief), { description: "The batch's other calls: `awaiting_approval`, `approved`, `denied`, `waiting` (needs no decision; runs with the batch) or `rejected`." }),
  recent: Type.Optional(Type.Array(Type.Object({ ...CallBrief, batchId: Type.String(), turn: Type.Integer() }), { description: "The run's last calls before this batch (at most 5), oldest first, with their result status." }))
}, { description: 'What the call is and what surrounds it: tool names and statuses only.' })

export const ApprovalInbox = Type.Object({
  approvals: Type.Array(Type.Composite([Type.Object({
    runId: Type.String(),
    batchId: Type.String(),
    elicitation: Type.Optional(Type.Object({
      message: Type.String(),
      requestedSchema: Type.Object({}, { additionalProperties: true })
    }, { description: 'A question an MCP server asks during this running call: approving answers `accept` with the decision\'s `content`, denying `decline`, expiry `cancel`.' })),
    context: Type.Optional(ApprovalContext)
  }), PendingApproval]))
})

/** The answer to decisions on MCP servers' questions about running calls. */
export const ElicitationsAnswered = Type.Object({
  runId: Type.String(),
  batchId: Type.String(),
  answered: Type.Array(Type.String(), { description: 'The call ids whose questions were answered.' })
})
