import { randomUUID } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { BatchEvent } from '../src/model/result.js'
import { ProblemError, problemBody } from '../src/errors.js'
import { decodeBatchBody } from '../src/formats/index.js'
import { principalOf } from '../src/http/auth.js'
import type { LineFields } from '../src/logger.js'
import { logRequest } from '../src/http/access-log.js'
import { SseStream } from '../src/http/sse.js'
import { waitForAnswer } from '../src/approvals/waiters.js'
import type { Services } from '../src/services.js'
import { BatchBody, BatchHeaders } from '../schemas/batch.js'
import { RunIdParams, problems } from '../schemas/common.js'
import { answer } from '../schemas/responses.js'
import { BATCH_REQUEST_EXAMPLE, BATCH_RESPONSE_EXAMPLE } from '../schemas/examples.js'

const JSON_TYPE = 'application/json; charset=utf-8'
/** How often a stream waiting for approvals reads the store, for what happened on other replicas. */
const WAIT_POLL_MS = 1000

/** The batch of tool calls one model turn produced (SPEC section 4). */
export const batchRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { engine, config } = services

  app.post('/v1/runs/:runId/batches', {
    config: { roles: ['orchestrator'] as const },
    schema: {
      tags: ['batches'],
      operationId: 'runBatch',
      summary: 'Run the tool calls of one model turn',
      description: 'Takes the calls as `calls` or as a provider\'s own response object (`openaiChat`, `openaiResponses`, `anthropic`, `gemini`); for the latter the answer also holds `messages` to append, in the same format. Prepares every call, runs them in epochs, and answers one result per call in source order. Sending the same `batchId` again answers the stored answer without dispatching anything. With `Accept: text/event-stream` the host-visible events stream as server-sent events, ending with `batch.completed` whose data is the whole answer; a problem after the stream opened ends it with an `error` event whose data is the problem.',
      params: RunIdParams,
      headers: BatchHeaders,
      body: answer(BatchBody, 'The calls of one model turn, in the order the model wrote them.', BATCH_REQUEST_EXAMPLE),
      response: {
        200: {
          description: 'The batch ran (or ran before: the stored answer).',
          content: {
            'application/json': { schema: Type.Ref('BatchResponse'), example: BATCH_RESPONSE_EXAMPLE },
            'text/event-stream': {
              schema: Type.String({ description: 'Server-sent events: `event:` is the event type, `data:` its JSON; the last event is `batch.completed` with the whole answer as data, or `error` with a problem.' }),
              example: 'event: batch.started\ndata: {"seq":1,"type":"batch.started","at":"2026-11-30T09:42:41.099Z","size":4}\n\nevent: batch.completed\ndata: {"runId":"demo-1","batchId":"turn-1","turn":1,"results":[],"events":[],"policyMessages":[],"continue":true,"run":{"state":"active"}}\n\n'
            }
          }
        },
        202: answer(Type.Ref('BatchResponse'), 'A call of the batch requires approval: nothing ran. `state` is `awaiting_approval`, `results` holds the rejections, `approvals` the held calls. ' +
          'With `Accept: text/event-stream` the answer is 200 and the stream sends `batch.awaiting_approval` (this body), stays open, and ends with `batch.completed` once the batch ran.'),
        ...problems('invalid_request', 'duplicate_call_id', 'run_not_found', 'run_busy', 'run_not_active', 'payload_too_large', 'batch_id_reused', 'quota_exceeded', 'overloaded')
      }
    }
  }, async (req, reply) => {
    const principal = principalOf(req)
    if (services.draining) throw new ProblemError('overloaded', 'The service is shutting down; send the batch to another replica.')
    const { calls, usage, format, incomplete } = decodeBatchBody(req.body)
    if (calls.length > config.maxCallsPerBatch) {
      throw new ProblemError('invalid_request', `A batch may hold at most ${config.maxCallsPerBatch} calls, got ${calls.length}.`)
    }
    const seen = new Set<string>()
    for (const call of calls) {
      if (seen.has(call.id)) throw new ProblemError('duplicate_call_id', `Call id ${call.id} appears more than once.`)
      seen.add(call.id)
    }
    const headerKey = req.headers['idempotency-key']
    if (headerKey !== undefined && req.body.batchId !== undefined && headerKey !== req.body.batchId) {
      throw new ProblemError('invalid_request', 'The batchId and the Idempotency-Key header differ.')
    }
    const batchId = req.body.batchId ?? headerKey ?? `batch_${randomUUID()}`
    const request = {
      runId: req.params.runId,
      tenant: principal.tenant,
      reqId: req.id,
      ...(principal.name === undefined ? {} : { keyName: principal.name }),
      scopes: principal.scopes,
      batchId,
      calls,
      ...(usage === undefined ? {} : { usage }),
      ...(format === undefined ? {} : { format, incomplete }),
      // The caller's trace continues in the batch's spans and reaches the executors.
      ...traceContext(req.headers)
    }

    if (!wantsEventStream(req.headers.accept)) {
      // The response is JSON text already (the stored answer, byte for byte, when replayed).
      const { body, log, status } = await engine.execute(request)
      req.batchLog = withTokens(log, usage)
      return reply.code(status ?? 200).type(JSON_TYPE).send(body)
    }

    // Server-sent events: the status line goes out with the first event, so
    // problems found before the batch starts (busy, not active) still get a
    // proper 4xx; after that, the stream carries everything.
    const gone = new AbortController()
    const raw = reply.raw
    const sse = new SseStream(raw, { heartbeatSeconds: config.sseHeartbeatSeconds, headers: reply.getHeaders() })
    const write = (type: string, data: unknown): void => {
      if (!sse.open) reply.hijack()
      sse.send(type, typeof data === 'string' ? data : JSON.stringify(data))
    }
    // The response's 'close' before it finished means the client went away.
    // Not the request's 'close': that fires as soon as the body has been read.
    // A client that left while the body was still being read is gone already.
    raw.on('close', () => { if (!raw.writableFinished) gone.abort() })
    if (raw.destroyed || req.raw.socket?.destroyed === true) gone.abort()
    try {
      let lastSeq = 0
      const onEvent = (e: BatchEvent): void => {
        lastSeq = e.seq
        if (e.type !== 'batch.completed') write(e.type, e)
      }
      const answered = await engine.execute({ ...request, signal: gone.signal, onEvent })
      req.batchLog = withTokens(answered.log, usage)
      let body: string | null = answered.body
      if (answered.status === 202) {
        // Held for approvals: the stream stays open until the batch completes, on whichever request or replica.
        write('batch.awaiting_approval', body)
        lastSeq = (JSON.parse(body) as { events: BatchEvent[] }).events.at(-1)?.seq ?? lastSeq
        body = await waitForAnswer({ store: services.store, waiters: services.approvals.waiters, runId: request.runId, batchId, lastSeq, send: onEvent, signal: gone.signal, pollMs: WAIT_POLL_MS })
      }
      if (body !== null) write('batch.completed', body)
      else if (!gone.signal.aborted) write('error', problemBody('run_not_found', 'The run ended before the batch completed.'))
      sse.end()
    } catch (err) {
      if (!sse.open) throw err
      // The stream is open: end it with the problem as its last event.
      const problem = err instanceof ProblemError ? problemBody(err.code, err.message, err.extra) : problemBody('internal_error')
      if (!(err instanceof ProblemError)) req.log.error({ err }, 'batch failed after the stream opened')
      write('error', problem)
      sse.end()
    }
    // Logged here, once (onResponse then finds it written): a response whose client went away never finishes.
    req.batchLog = { ...req.batchLog, stream: true, clientGone: gone.signal.aborted }
    logRequest(req, raw.statusCode, reply.elapsedTime)
    return reply
  })
}

/**
 * Whether the client asks for server-sent events: `text/event-stream` is
 * listed with a non-zero quality, at least as high as `application/json`'s.
 */
export function wantsEventStream (accept: string | undefined): boolean {
  if (accept === undefined) return false
  const quality = new Map<string, number>()
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((p) => p.trim().toLowerCase())
    const q = params.find((p) => p.startsWith('q='))
    const value = q === undefined ? 1 : Number(q.slice(2))
    quality.set(type, Number.isFinite(value) ? value : 0)
  }
  const sse = quality.get('text/event-stream') ?? 0
  return sse > 0 && sse >= (quality.get('application/json') ?? 0)
}

/** A batch's line with the tokens its request reported, unless it was answered from the store (they were counted then). */
function withTokens (log: LineFields, usage: { inputTokens?: number, outputTokens?: number } | undefined): LineFields {
  if (usage === undefined || log.replayed === true) return log
  const out = { ...log }
  if (usage.inputTokens !== undefined) out.inputTokens = usage.inputTokens
  if (usage.outputTokens !== undefined) out.outputTokens = usage.outputTokens
  return out
}

function traceContext (headers: Record<string, string | string[] | undefined>): { traceparent?: string, tracestate?: string } {
  const out: { traceparent?: string, tracestate?: string } = {}
  if (typeof headers.traceparent === 'string') out.traceparent = headers.traceparent
  if (typeof headers.tracestate === 'string') out.tracestate = headers.tracestate
  return out
}
