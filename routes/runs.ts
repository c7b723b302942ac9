import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { principalOf } from '../src/http/auth.js'
import type { Services } from '../src/services.js'
import { summarize } from '../src/telemetry/summary.js'
import { RunIdParams, problems } from '../schemas/common.js'
import { CreateRunBody, MessageBody } from '../schemas/run.js'
import { OfferedToolList } from '../schemas/tool.js'
import { Summary } from '../schemas/summary.js'

const orchestrator = { roles: ['orchestrator'] as const }
const RunRef = Type.Ref('Run')

/** Runs: one agent loop each (SPEC section 3). */
export const runRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { runs, tools } = services

  app.post('/v1/runs', {
    config: orchestrator,
    schema: { tags: ['runs'], summary: 'Create a run', body: CreateRunBody, response: { 201: RunRef, ...problems(400, 401, 403, 409, 503) } },
    // Every field is optional, so is the body: no body is {}.
    preValidation: async (req) => { req.body ??= {} }
  }, async (req, reply) => {
    const view = await runs.create(principalOf(req).tenant, req.body)
    services.telemetry.summary.runCreated()
    return reply.code(201).send(view)
  })

  app.get('/v1/runs/:runId', {
    config: orchestrator,
    schema: { tags: ['runs'], summary: 'Read a run', params: RunIdParams, response: { 200: RunRef, ...problems(401, 403, 404) } }
  }, async (req) => runs.view(await runs.get(principalOf(req).tenant, req.params.runId)))

  app.delete('/v1/runs/:runId', {
    config: orchestrator,
    schema: { tags: ['runs'], summary: 'End a run and free its state', params: RunIdParams, response: { 200: RunRef, ...problems(401, 403, 404) } }
  }, async (req) => runs.end(principalOf(req).tenant, req.params.runId))

  app.get('/v1/runs/:runId/tools', {
    config: orchestrator,
    schema: { tags: ['runs'], summary: 'The tools to offer the model in this run', params: RunIdParams, response: { 200: OfferedToolList, ...problems(401, 403, 404) } }
  }, async (req) => {
    const principal = principalOf(req)
    const run = await runs.get(principal.tenant, req.params.runId)
    const allowed = run.options.tools === null ? null : new Set(run.options.tools)
    const all = principal.scopes.has('*')
    return {
      tools: tools.list()
        .filter((t) => (allowed === null || allowed.has(t.name)) && (all || t.requiredScopes.every((s) => principal.scopes.has(s))))
        .map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }))
    }
  })

  app.post('/v1/runs/:runId/messages', {
    config: orchestrator,
    schema: { tags: ['runs'], summary: 'Record a genuine user message (resets the exact-repeat streak)', params: RunIdParams, body: MessageBody, response: { 200: RunRef, ...problems(400, 401, 403, 404, 409) } }
  }, async (req) => runs.message(principalOf(req).tenant, req.params.runId))

  app.post('/v1/runs/:runId/cancel', {
    config: orchestrator,
    schema: { tags: ['runs'], summary: 'Cancel the batch in flight and the run', params: RunIdParams, response: { 200: RunRef, ...problems(401, 403, 404) } }
  }, async (req) => runs.cancel(principalOf(req).tenant, req.params.runId))

  app.get('/v1/runs/:runId/summary', {
    config: orchestrator,
    schema: { tags: ['runs'], summary: "A run's performance summary", params: RunIdParams, response: { 200: Summary, ...problems(401, 403, 404) } }
  }, async (req) => {
    const run = await runs.get(principalOf(req).tenant, req.params.runId)
    return { runId: run.runId, state: run.state, ...summarize(run.stats, run.counters.turns) }
  })

  app.get('/v1/summary', {
    config: { roles: ['operator'] as const },
    schema: { tags: ['operations'], summary: 'Aggregate performance summary of every run since start', response: { 200: Summary, ...problems(401, 403) } }
  }, async () => {
    const { summary } = services.telemetry
    return { since: summary.startedAt, runs: summary.runsCreated, ...summary.summary() }
  })
}
