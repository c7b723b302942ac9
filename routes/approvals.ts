import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { Decider } from '../src/model/waiting.js'
import { principalOf } from '../src/http/auth.js'
import type { Services } from '../src/services.js'
import type { InboxEntry } from '../src/approvals/service.js'
import type { PendingElicitation } from '../src/approvals/elicitations.js'
import { type ApprovalContext, type RecentCall, recentCalls } from '../src/approvals/context.js'
import { ApprovalInbox, DecisionsBody, ElicitationsAnswered } from '../schemas/approval.js'
import { BatchParams } from '../schemas/listing.js'
import { problems } from '../schemas/common.js'
import { answer } from '../schemas/responses.js'

const JSON_TYPE = 'application/json; charset=utf-8'
const deciders = { roles: ['orchestrator', 'approver'] as const }
/** The most runs whose latest calls one inbox answer reads (each costs a read of a batch answer or two). */
const INBOX_RECENT_RUNS = 50

/** A person approves, edits or denies held calls (SPEC section 13). */
export const approvalRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { approvals } = services

  app.get('/v1/approvals', {
    config: deciders,
    schema: {
      tags: ['approvals'],
      operationId: 'listApprovals',
      summary: "Every call of the tenant's runs waiting for a decision",
      description: 'Oldest request first. The only place toolgate shows arguments: the prepared ones a person decides on.',
      response: { 200: answer(ApprovalInbox, 'The calls waiting for a decision, with their prepared arguments.') }
    }
  }, async (req) => {
    const { tenant } = principalOf(req)
    // A server's questions during running calls (SPEC section 18) beside the held calls, oldest first.
    const all: Array<InboxEntry | PendingElicitation> = [...await approvals.inbox(tenant), ...services.elicitations.pending(tenant)]
    // For the person deciding: what the tool is and what the run did just before (a run's latest batches read once).
    const recent = new Map<string, Promise<RecentCall[]>>()
    const withContext = await Promise.all(all.map(async (entry) => {
      if (!recent.has(entry.runId)) recent.set(entry.runId, recent.size < INBOX_RECENT_RUNS ? recentCalls(services.store, entry.runId) : Promise.resolve([]))
      const description = services.tools.get(entry.tool)?.description
      const context: ApprovalContext = {
        ...(description === undefined ? {} : { description }),
        batch: ('context' in entry ? entry.context?.batch : undefined) ?? [],
        recent: (await recent.get(entry.runId)) ?? []
      }
      return { ...entry, context }
    }))
    return { approvals: withContext.sort((a, b) => a.requestedAt.localeCompare(b.requestedAt)) }
  })

  app.post('/v1/runs/:runId/batches/:batchId/approvals', {
    config: deciders,
    schema: {
      tags: ['approvals'],
      operationId: 'decideApprovals',
      summary: 'Approve, edit or deny held calls',
      description: 'All decisions of a request apply, or none: a call that is unknown, not held or decided already is 409 `approval_not_pending`. ' +
        'While calls remain undecided the answer is 202 with what remains; the request deciding the last one runs the batch and answers its completed answer (200).',
      params: BatchParams,
      body: answer(DecisionsBody, 'Decisions on held calls of the batch.'),
      response: {
        200: answer(Type.Ref('BatchResponse'), 'The last held call was decided: the batch ran; its completed answer.'),
        202: answer(Type.Union([Type.Ref('BatchResponse'), ElicitationsAnswered]), 'Calls remain undecided: the batch as it stands (`state: awaiting_approval`); or the decisions answered questions of MCP servers about running calls (`answered`).'),
        ...problems('invalid_request', 'run_not_found', 'batch_not_found', 'approval_not_pending')
      }
    }
  }, async (req, reply) => {
    const principal = principalOf(req)
    const { runId, batchId } = req.params
    if (services.elicitations.decide(principal.tenant, runId, batchId, req.body.decisions)) {
      return reply.code(202).type(JSON_TYPE).send(JSON.stringify({ runId, batchId, answered: req.body.decisions.map((d) => d.callId) }))
    }
    const by: Decider = principal.name === undefined ? { tenant: principal.tenant } : { tenant: principal.tenant, name: principal.name }
    const answer = await approvals.decide(by, req.params.runId, req.params.batchId, req.body.decisions)
    return reply.code(answer.status).type(JSON_TYPE).send(answer.body)
  })
}
