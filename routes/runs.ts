import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProblemError } from '../src/errors.js'
import { principalOf } from '../src/http/auth.js'
import type { Services } from '../src/services.js'
import { summarize } from '../src/telemetry/summary.js'
import { RunIdParams, problems } from '../schemas/common.js'
import { CreateRunBody, MessageBody } from '../schemas/run.js'
import { OfferedToolList, ProviderToolList, ToolListQuery } from '../schemas/tool.js'
import { answer } from '../schemas/responses.js'
import { RUN_EXAMPLE, SUMMARY_EXAMPLE } from '../schemas/examples.js'
import { formatNamed } from '../src/formats/index.js'
import { offeredTools } from '../src/tools/offered.js'

const orchestrator = { roles: ['orchestrator'] as const }
const RunRef = Type.Ref('Run')
const SummaryRef = Type.Ref('Summary')

/** Runs: one agent loop each (SPEC section 3). */
export const runRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { runs, tools } = services

  app.post('/v1/runs', {
    config: orchestrator,
    schema: {
      tags: ['runs'],
      operationId: 'createRun',
      summary: 'Create a run',
      description: 'Starts one agent loop. Every field is optional (so is the body); the answer shows every option with its default filled in. A `runId` already in use, by any tenant, is `409 run_exists`.',
      body: CreateRunBody,
      response: { 201: answer(RunRef, 'The run was created.', RUN_EXAMPLE), ...problems('invalid_request', 'run_exists', 'quota_exceeded', 'overloaded') }
    },
    // Every field is optional, so is the body: no body is {}.
    preValidation: async (req) => { req.body ??= {} }
  }, async (req, reply) => {
    if (services.draining) throw new ProblemError('overloaded', 'The service is shutting down; create the run on another replica.')
    const view = await runs.create(principalOf(req).tenant, req.body)
    services.telemetry.summary.runCreated()
    services.telemetry.requests.runCreated()
    return reply.code(201).send(view)
  })

  app.get('/v1/runs/:runId', {
    // An operator reads it too (the page's runs list for operators); nothing in it is an argument.
    config: { roles: ['orchestrator', 'operator'] as const },
    schema: {
      tags: ['runs'],
      operationId: 'getRun',
      summary: 'Read a run',
      description: 'The run as it stands: state, effective options, counters. A run past its `timeoutMs` is terminated on this read. Orchestrator or operator role.',
      params: RunIdParams,
      response: { 200: answer(RunRef, 'The run.', RUN_EXAMPLE), ...problems('run_not_found') }
    }
  }, async (req) => runs.view(await runs.get(principalOf(req).tenant, req.params.runId)))

  app.delete('/v1/runs/:runId', {
    config: orchestrator,
    schema: {
      tags: ['runs'],
      operationId: 'endRun',
      summary: 'End a run and free its state',
      description: 'Sets the run to `ended`, stops a batch in flight from starting more calls, and frees its batch records and repeat state; its receipts stay for their retention time.',
      params: RunIdParams,
      response: { 200: answer(RunRef, 'The run, now ended.'), ...problems('run_not_found') }
    }
  }, async (req) => {
    const view = await runs.end(principalOf(req).tenant, req.params.runId)
    services.telemetry.requests.runEnded()
    return view
  })

  app.get('/v1/runs/:runId/tools', {
    config: orchestrator,
    schema: {
      tags: ['runs'],
      operationId: 'listRunTools',
      summary: 'The tools to offer the model in this run',
      description: "Only the tools the run's allow-list and the caller's scopes permit, with name, description and input schema: never executor URLs, rewrite rules or projections. With `format`, in that provider's tool-definition shape, ready to pass as its request's `tools`.",
      params: RunIdParams,
      querystring: ToolListQuery,
      response: { 200: answer(Type.Union([OfferedToolList, ProviderToolList]), 'The tools to offer the model.'), ...problems('invalid_request', 'run_not_found') }
    }
  }, async (req) => {
    const principal = principalOf(req)
    const run = await runs.get(principal.tenant, req.params.runId)
    const offered = offeredTools(tools.list(), run.options.tools, principal.scopes, (name) => tools.quarantined(name))
      .map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }))
    const format = req.query.format === undefined ? undefined : formatNamed(req.query.format)
    if (format === undefined) return { tools: offered }
    // Under names the model APIs accept; a call under the offered name resolves to the tool.
    return { tools: format.toolList(offered.map((t) => ({ ...t, name: tools.modelName(t.name) }))) }
  })

  app.post('/v1/runs/:runId/messages', {
    config: orchestrator,
    schema: {
      tags: ['runs'],
      operationId: 'recordMessage',
      summary: 'Record a genuine user message (resets the exact-repeat streak)',
      description: 'Tells toolgate a real user message (`steering` or `follow_up`) reached the model: the exact-repeat streak starts again. Fields of your own beside `kind` are allowed.',
      params: RunIdParams,
      body: MessageBody,
      response: { 200: answer(RunRef, 'The message was recorded; the run.'), ...problems('invalid_request', 'run_not_found', 'run_not_active') }
    }
  }, async (req) => runs.message(principalOf(req).tenant, req.params.runId))

  app.post('/v1/runs/:runId/cancel', {
    config: orchestrator,
    schema: {
      tags: ['runs'],
      operationId: 'cancelRun',
      summary: 'Cancel the batch in flight and the run',
      description: 'Calls already running settle; no other call starts (they are `cancelled`); the run becomes `cancelled`. No body is read. Cancelling a run that is not active answers it unchanged.',
      params: RunIdParams,
      response: { 200: answer(RunRef, 'The run, cancelled (or unchanged when it was not active).'), ...problems('run_not_found') }
    }
  }, async (req) => runs.cancel(principalOf(req).tenant, req.params.runId))

  app.get('/v1/runs/:runId/summary', {
    config: orchestrator,
    schema: {
      tags: ['runs'],
      operationId: 'getRunSummary',
      summary: "A run's performance summary",
      description: 'Turns, calls by status, epochs, time in tools against wall time, repeats, projection failures, uncertain writes and blocked calls of this run.',
      params: RunIdParams,
      response: { 200: answer(SummaryRef, "The run's summary.", SUMMARY_EXAMPLE), ...problems('run_not_found') }
    }
  }, async (req) => {
    const run = await runs.get(principalOf(req).tenant, req.params.runId)
    return { runId: run.runId, state: run.state, ...summarize(run.stats, run.counters.turns) }
  })

  app.get('/v1/summary', {
    config: { roles: ['operator'] as const },
    schema: {
      tags: ['operations'],
      operationId: 'getSummary',
      summary: 'Aggregate performance summary of every run since start',
      description: 'The same figures as a run summary, over every batch this process answered since it started (operator role).',
      response: { 200: answer(SummaryRef, 'The summary since the process started.') }
    }
  }, async () => {
    const { summary } = services.telemetry
    return { since: summary.startedAt, runs: summary.runsCreated, ...summary.summary() }
  })
}
