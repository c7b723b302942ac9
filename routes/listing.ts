import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { type Static, Type } from '@sinclair/typebox'
import { ProblemError } from '../src/errors.js'
import { principalOf } from '../src/http/auth.js'
import { isWaiting } from '../src/batch/engine.js'
import { decodeRunCursor, encodeRunCursor } from '../src/runs/cursor.js'
import type { Services } from '../src/services.js'
import { operatorBatchView, operatorOnly } from '../src/http/operator-view.js'
import type { RunView } from '../src/runs/view.js'
import { RunIdParams, problems } from '../schemas/common.js'
import { answer } from '../schemas/responses.js'
import { BatchInProgress, BatchList, type BatchListItem, BatchListQuery, BatchParams, RunList, RunListQuery } from '../schemas/listing.js'

/** An operator reads runs and batches too, without arguments or content (src/http/operator-view.ts). */
const readers = { roles: ['orchestrator', 'operator'] as const }
/** The most store pages one filtered runs list reads before it answers what it found (and where to go on). */
const MAX_FILTER_PAGES = 20
const JSON_TYPE = 'application/json; charset=utf-8'

/**
 * The app validates without coercing types (a body's "5" stays a string),
 * so a query's integer parameters are turned into numbers here, before
 * validation; anything that is not plain digits stays text and is refused.
 */
function integersOf (...names: string[]): (req: { query: unknown }) => Promise<void> {
  return async (req) => {
    const query = req.query as Record<string, unknown>
    for (const name of names) {
      const v = query[name]
      if (typeof v === 'string' && /^[0-9]{1,15}$/.test(v)) query[name] = Number(v)
    }
  }
}

/** Read routes over runs and their batches, for operators' views (the page at /ui among them). */
export const listingRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { runs, store, engine } = services

  app.get('/v1/runs', {
    config: readers,
    schema: {
      tags: ['runs'],
      operationId: 'listRuns',
      summary: "The tenant's runs, most recently used first",
      description: 'Runs held (ended ones until they expire), in pages. A run used while pages are read moves to the front, so a later page may miss it or an earlier one repeat it. ' +
        'With `state`, only runs in that state: a page may then hold fewer than `limit` runs while `next` is not null (the runs read so far were of other states). Orchestrator or operator role.',
      querystring: RunListQuery,
      response: { 200: answer(RunList, "A page of the tenant's runs and the cursor of the next."), ...problems('invalid_request') }
    },
    preValidation: integersOf('limit')
  }, async (req) => {
    const tenant = principalOf(req).tenant
    const { limit = 50, cursor, state } = req.query
    const after = cursor === undefined ? undefined : decodeRunCursor(cursor)
    if (cursor !== undefined && after === undefined) throw new ProblemError('invalid_request', 'The cursor is not one this service gave.')
    if (state === undefined) {
      const page = await store.listRuns(tenant, limit, after)
      return { runs: page.runs.map((r) => runs.view(r)), next: page.next === null ? null : encodeRunCursor(page.next) }
    }
    // Filtered: pages of at most what is still wanted, so a page never holds more matches than fit and
    // its cursor is exact; bounded in store reads, the client goes on from `next`.
    const found: RunView[] = []
    let from = after
    for (let pages = 0; pages < MAX_FILTER_PAGES && found.length < limit; pages++) {
      const page = await store.listRuns(tenant, limit - found.length, from)
      for (const r of page.runs) if (r.state === state) found.push(runs.view(r))
      if (page.next === null) return { runs: found, next: null }
      from = page.next
    }
    return { runs: found, next: from === undefined ? null : encodeRunCursor(from) }
  })

  app.get('/v1/runs/:runId/batches', {
    config: readers,
    schema: {
      tags: ['batches'],
      operationId: 'listRunBatches',
      summary: "A run's batches, latest turn first",
      description: 'Finished batches with their turn, call count and calls by status (no results, no arguments); the batch in flight first, as `running`.',
      params: RunIdParams,
      querystring: BatchListQuery,
      response: { 200: answer(BatchList, "A page of the run's batches and the turn the next page starts before."), ...problems('run_not_found') }
    },
    preValidation: integersOf('limit', 'beforeTurn')
  }, async (req) => {
    const run = await runs.get(principalOf(req).tenant, req.params.runId)
    const { limit = 100, beforeTurn } = req.query
    const finished = (await store.listBatches(run.runId))
      .filter((b) => beforeTurn === undefined || b.turn < beforeTurn)
      .sort((a, b) => b.turn - a.turn)
    const page = finished.slice(0, limit)
    const batches: Array<Static<typeof BatchListItem>> = page.map((b) => ({ batchId: b.batchId, state: 'completed', turn: b.turn, calls: b.calls, statuses: b.statuses, completedAt: new Date(b.completedAt).toISOString() }))
    const inFlight = run.inFlight?.batchId
    const held = inFlight !== undefined && isWaiting(run, inFlight)
    if (beforeTurn === undefined && inFlight !== undefined && !page.some((b) => b.batchId === inFlight)) batches.unshift({ batchId: inFlight, state: held ? 'awaiting_approval' : 'running' })
    return { batches, next: finished.length > limit ? page.at(-1)!.turn : null }
  })

  app.get('/v1/runs/:runId/batches/:batchId', {
    // An approver reads the batch it decides on (src/approvals); an operator reads it without arguments or content.
    config: { roles: ['orchestrator', 'approver', 'operator'] as const },
    schema: {
      tags: ['batches'],
      operationId: 'getBatch',
      summary: 'A batch as it stands',
      description: 'A finished batch answers its stored answer, exactly as the batch request answered it; a batch waiting for approvals answers as its 202 did (`state: awaiting_approval`, with `approvals`); the batch in flight answers its state. ' +
        'An operator key (without the orchestrator or approver role) reads it without `content`, `messages`, receipts, executor details and arguments.',
      params: BatchParams,
      response: { 200: answer(Type.Union([Type.Ref('BatchResponse'), BatchInProgress]), 'The stored answer of a finished batch, or the state of the batch in flight.'), ...problems('run_not_found', 'batch_not_found') }
    }
  }, async (req, reply) => {
    const principal = principalOf(req)
    const run = await runs.get(principal.tenant, req.params.runId)
    const { batchId } = req.params
    const shown = operatorOnly(principal.roles) ? operatorBatchView : (json: string) => json
    const record = await store.getBatch(run.runId, batchId)
    // The stored JSON text, byte for byte as first answered.
    if (record !== undefined) return reply.type(JSON_TYPE).send(shown(record.responseJson))
    if (isWaiting(run, batchId)) return reply.type(JSON_TYPE).send(shown(engine.answerWaiting(run, run.waiting)))
    if (run.inFlight?.batchId === batchId) return { runId: run.runId, batchId, state: 'running' }
    throw new ProblemError('batch_not_found', `Run ${run.runId} has no batch ${batchId}.`)
  })
}
