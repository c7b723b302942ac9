/**
 * The floor: what the SPEC makes every batch cost, and nothing more, written
 * flat in one route handler. It does the work no implementation of toolgate
 * can skip, with toolgate's own primitives: the API key looked up by its
 * SHA-256, the body validated against toolgate's route schema, each call's
 * arguments validated by the tool's compiled schema and serialized in
 * canonical form, the request hash, the fingerprint and the operation id
 * (three SHA-256), each call sent by toolgate's executor client with its
 * Idempotency-Key and traceparent headers and a tool timeout, the answer's content serialized to a string,
 * the answer kept for idempotent resends (as toolgate's memory store keeps
 * it) and one log line per batch.
 *
 * What it leaves out is everything else toolgate does: epochs, caps and
 * conflict keys (every call is sent at once), exact-repeat admission and run
 * limits, leases, events, metrics, traces, summaries, receipts, cancellation
 * and most error handling. It answers only the bench's read-only `look`
 * calls correctly. It is a measuring stick, not a service: toolgate's
 * throughput over the floor's says how much of the gap to the relay is
 * toolgate's own design, and the floor's over the relay how much any
 * implementation of the SPEC must pay.
 */
import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance } from 'fastify'
import { BatchBody } from '../schemas/batch.js'
import { KeyRing, type Principal } from '../src/auth/keys.js'
import { contentOf } from '../src/model/content.js'
import { identifyCalls } from '../src/batch/identify-calls.js'
import { ExecutorClient } from '../src/dispatch/client.js'
import { executorBodyPrefix } from '../src/dispatch/executor-body.js'
import { IsoTime } from '../src/iso-time.js'
import { jsonString } from '../src/json-text.js'
import { createLogger } from '../src/logger.js'
import { operationId } from '../src/receipts/operation-id.js'
import { fingerprintOfText } from '../src/repeat/exact.js'
import { randomHex } from '../src/telemetry/tracing.js'
import { ToolRegistry } from '../src/tools/registry.js'
import { BENCH_KEY } from './settings.js'
import { benchTools } from './workloads.js'

interface FloorRun { runId: string, tenant: string, createdAt: number, turns: number, batches: Map<string, { hash: string, answer: Buffer }> }
interface FloorCall { id: string, name: string, arguments?: unknown }

/** ISO times as toolgate writes them (src/iso-time.ts). */
const DEADLINES = new IsoTime()
const START_TIMES = new IsoTime()

export function buildFloor (executorUrl: string): { app: FastifyInstance, close: () => Promise<void> } {
  // toolgate's own executor client, as the services it is compared with are configured.
  const client = new ExecutorClient({ maxResponseBytes: 1024 * 1024 })
  const tools = new ToolRegistry({ allowedOrigins: null })
  tools.putAll(benchTools(executorUrl))
  const keys = KeyRing.fromDocument({ keys: [{ key: BENCH_KEY, tenant: 'bench', roles: ['orchestrator'] }] })
  const logger = createLogger('info')
  const runs = new Map<string, FloorRun>()
  const app = Fastify({ logger: false, keepAliveTimeout: 60_000 })
  app.decorateRequest('principal', null)

  app.addHook('onRequest', (req, reply, done) => {
    const principal = keys.authenticate(req.headers.authorization)
    if (principal === null) {
      void reply.code(401).send({ code: 'unauthorized' })
      return
    }
    (req as unknown as { principal: Principal }).principal = principal
    done()
  })

  app.post('/v1/runs', async (req, reply) => {
    const runId = `run_${randomUUID()}`
    runs.set(runId, { runId, tenant: (req as unknown as { principal: Principal }).principal.tenant, createdAt: Date.now(), turns: 0, batches: new Map() })
    return await reply.code(201).send({ runId })
  })
  app.delete<{ Params: { runId: string } }>('/v1/runs/:runId', async (req) => {
    runs.delete(req.params.runId)
    return { state: 'ended' }
  })

  app.post<{ Params: { runId: string }, Body: { batchId?: string, calls: FloorCall[] } }>('/v1/runs/:runId/batches', { schema: { body: BatchBody } }, async (req, reply) => {
    const t0 = performance.now()
    const run = runs.get(req.params.runId)
    if (run === undefined || run.tenant !== (req as unknown as { principal: Principal }).principal.tenant) return await reply.code(404).send({ code: 'run_not_found' })
    const { calls } = req.body
    const batchId = req.body.batchId ?? `batch_${randomUUID()}`
    const identifying = identifyCalls(calls)
    const { requestHash: hash, argumentTexts } = identifying instanceof Promise ? await identifying : identifying
    const texts = argumentTexts.map((a) => a.text)
    const known = run.batches.get(batchId)
    if (known !== undefined && known.hash === hash) return await reply.type('application/json; charset=utf-8').send(known.answer.toString())
    const turn = ++run.turns
    const prefix = executorBodyPrefix(run.runId, batchId)
    const traceId = randomHex(16)
    const results = await Promise.all(calls.map(async (c, i) => {
      const tool = tools.resolve(c.name)!
      const args = typeof c.arguments === 'string' ? JSON.parse(c.arguments) as unknown : c.arguments ?? {}
      const verdict = tool.validate(args)
      if (!(verdict instanceof Promise ? await verdict : verdict).valid) return { callId: c.id, name: c.name, status: 'rejected', content: '{"error":"invalid_arguments"}', isError: true, details: { reason: 'invalid_arguments' } }
      const opId = operationId(run, c.id, fingerprintOfText(tool.name, texts[i]!))
      const timeoutMs = tool.executor.timeoutMs
      const body = `${prefix}${jsonString(c.id)},"tool":${jsonString(tool.name)},"arguments":${texts[i]!},"operationId":"${opId}","deadline":"${DEADLINES.at(Date.now() + timeoutMs)}"}`
      const trace = { traceparent: `00-${traceId}-${randomHex(8)}-00` }
      const startedAt = Date.now()
      const started = performance.now()
      const answer = await client.post({ url: tool.executor.url, timeoutMs, body, idempotencyKey: opId, trace })
      const durationMs = Math.round((performance.now() - started) * 1000) / 1000
      const ok = answer.kind === 'answered' && answer.status >= 200 && answer.status < 300
      const content = ok ? contentOf((answer.body as { content?: unknown }).content) : '{"error":"executor_failed"}'
      return { callId: c.id, name: c.name, status: ok ? 'ok' : 'error', content, isError: !ok, details: { httpStatus: answer.kind === 'answered' ? answer.status : 0, operationId: opId, epoch: 0, durationMs, startedAt: START_TIMES.at(startedAt) } }
    }))
    const json = JSON.stringify({ runId: run.runId, batchId, turn, results, events: [], policyMessages: [], continue: true, run: { state: 'active' } })
    run.batches.set(batchId, { hash, answer: Buffer.from(json) })
    logger.info({ runId: run.runId, batchId, turn, calls: calls.length, outcome: 'completed', durationMs: Math.round((performance.now() - t0) * 1000) / 1000 }, 'batch completed')
    return await reply.type('application/json; charset=utf-8').send(json)
  })

  return { app, close: async () => { await app.close(); await client.close() } }
}
