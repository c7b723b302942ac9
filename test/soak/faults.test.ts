/**
 * A fault soak, bounded in count and time: thousands of batches across many
 * runs against an executor on loopback that times out, resets connections,
 * answers 5xx and is slow at random; the orchestrator resubmits some batches,
 * some of them while the first is still running. Nothing may be lost, no
 * write may reach the executor twice, memory must stay bounded, and the
 * service must be healthy at the end.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, sleep, startExecutor, tool, type ExecutorCall } from '../helper.js'
import { random } from './seeded.js'

// Bounded work, not a deadline: room for a loaded 2-core machine beyond tap's 120 s default.
t.setTimeout(300_000)

const RUNS = Number(process.env.SOAK_RUNS ?? 250)
const BATCHES_PER_RUN = 8
const WORKERS = 12
const MAX_RUNS = 40
/** Generous, so that only injected timeouts time out even on a loaded machine. */
const TOOL_TIMEOUT_MS = 300
/** Generous: the service holds at most MAX_RUNS runs and 500 receipts, a few MiB; unbounded it would hold every batch. */
const HEAP_GROWTH_BOUND = 24 * 2 ** 20
const STATUSES = new Set(['ok', 'error', 'rejected', 'uncertain', 'blocked', 'cancelled', 'terminated', 'projection_failed'])

type Fault = 'fine' | 'slow' | 'timeout' | 'reset' | 'http5xx' | 'http4xx'
const FAULTS: Array<[Fault, number]> = [['fine', 0.6], ['slow', 0.12], ['timeout', 0.04], ['reset', 0.1], ['http5xx', 0.09], ['http4xx', 0.05]]

function gc (): void {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
}

interface Call { id: string, name: string, arguments: Record<string, unknown> }
interface Figures { batches: number, resubmissions: number, concurrentResubmissions: number, calls: number, lost: number, malformed: number, mismatched: number, replayDiffers: number, unexpected: string[] }

async function send (app: FastifyInstance, method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown): Promise<{ status: number, text: string }> {
  const res = await app.inject({ method, url, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) }) })
  return { status: res.statusCode, text: res.body }
}

t.test('under executor faults and resubmissions every call gets exactly one result, no write runs twice, memory stays bounded', async (t) => {
  const seed = process.env.SOAK_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.SOAK_SEED)
  t.comment(`soak seed ${seed}`)
  const rand = random(seed)
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!

  // ---- the faulty executor ----
  const ex = await startExecutor(t)
  const injected: Record<Fault, number> = { fine: 0, slow: 0, timeout: 0, reset: 0, http5xx: 0, http4xx: 0 }
  const faulty = async (call: ExecutorCall, req: { raw: { socket: { destroy: () => void } } }, reply: { code: (n: number) => { send: (b: unknown) => unknown } }): Promise<unknown> => {
    let r = rand()
    let fault: Fault = 'fine'
    for (const [name, p] of FAULTS) {
      if (r < p) { fault = name; break }
      r -= p
    }
    injected[fault]++
    const answer = call.tool === 'act' ? { status: 'committed', result: { n: call.arguments.x } } : { content: { ok: true, x: call.arguments.x } }
    switch (fault) {
      case 'fine': return answer
      case 'slow': await sleep(5 + Math.floor(rand() * 40)); return answer
      case 'timeout': await sleep(TOOL_TIMEOUT_MS + 100); return answer
      case 'reset': req.raw.socket.destroy(); return undefined
      case 'http5xx': return reply.code(pick([500, 502, 503])).send({ error: 'boom' })
      case 'http4xx': return reply.code(pick([400, 409, 422])).send({ content: 'refused' })
    }
  }
  for (const name of ['read', 'write', 'keyed', 'act']) ex.on(name, faulty as never)
  const tools = [
    tool('read', ex.url, { readOnly: true, executor: { url: `${ex.url}/tools/read`, timeoutMs: TOOL_TIMEOUT_MS } }),
    tool('write', ex.url, { executor: { url: `${ex.url}/tools/write`, timeoutMs: TOOL_TIMEOUT_MS } }),
    tool('keyed', ex.url, { conflictKey: 'cell:{/x}', execution: 'parallel', executor: { url: `${ex.url}/tools/keyed`, timeoutMs: TOOL_TIMEOUT_MS } }),
    tool('act', ex.url, { action: { projection: "{ 'status': receipt.status }" }, executor: { url: `${ex.url}/tools/act`, timeoutMs: TOOL_TIMEOUT_MS } })
  ]
  const { app } = await buildTestApp(t, {
    tools,
    config: { maxRuns: MAX_RUNS, maxReceipts: 500, receiptRetentionSeconds: 0, logLevel: 'silent' }
  })

  // ---- the orchestrators ----
  const figures: Figures = { batches: 0, resubmissions: 0, concurrentResubmissions: 0, calls: 0, lost: 0, malformed: 0, mismatched: 0, replayDiffers: 0, unexpected: [] }
  /** Every result the service gave, by call id (call ids are unique across the soak). */
  const resultOf = new Map<string, string>()
  const causes = new Map<string, number>()
  const unexpected = (what: string): void => { if (figures.unexpected.length < 20) figures.unexpected.push(what) }

  const check = (calls: Call[], text: string): void => {
    const body = JSON.parse(text) as { results?: Array<{ callId: string, status: string, content: unknown, details: { cause?: string, httpStatus?: number, reason?: string } }> }
    const results = body.results ?? []
    if (results.length !== calls.length) figures.lost += Math.max(0, calls.length - results.length)
    for (const [i, call] of calls.entries()) {
      const r = results[i]
      if (r === undefined) continue
      if (r.callId !== call.id) figures.mismatched++
      if (!STATUSES.has(r.status) || typeof r.content !== 'string') figures.malformed++
      resultOf.set(r.callId, r.status)
      const why = `${r.status}:${r.details.cause ?? r.details.httpStatus ?? r.details.reason ?? ''}`
      causes.set(why, (causes.get(why) ?? 0) + 1)
    }
  }

  const runBatch = async (runId: string, batchId: string, calls: Call[]): Promise<void> => {
    const body = { batchId, calls }
    const url = `/v1/runs/${runId}/batches`
    const resubmit = rand()
    figures.batches++
    figures.calls += calls.length
    if (resubmit < 0.1) {
      // The orchestrator lost patience and sent it again while the first was running.
      figures.concurrentResubmissions++
      const [a, b] = await Promise.all([send(app, 'POST', url, body), sleep(Math.floor(rand() * 20)).then(() => send(app, 'POST', url, body))])
      const answered = [a, b].filter((x) => x.status === 200)
      const busy = [a, b].filter((x) => x.status === 409 && JSON.parse(x.text).code === 'run_busy')
      if (answered.length + busy.length !== 2 || answered.length === 0) return unexpected(`${url} concurrent: ${a.status} ${b.status} ${a.text.slice(0, 200)} ${b.text.slice(0, 200)}`)
      check(calls, answered[0]!.text)
      if (answered.length === 2 && answered[0]!.text !== answered[1]!.text) figures.replayDiffers++
      // The loser asks again once the first is done, and must get the same answer.
      const again = await send(app, 'POST', url, body)
      if (again.status !== 200 || again.text !== answered[0]!.text) figures.replayDiffers++
      return
    }
    const first = await send(app, 'POST', url, body)
    if (first.status !== 200) return unexpected(`${url}: ${first.status} ${first.text.slice(0, 300)}`)
    check(calls, first.text)
    if (resubmit < 0.25) {
      figures.resubmissions++
      const again = await send(app, 'POST', url, body)
      if (again.status !== 200 || again.text !== first.text) figures.replayDiffers++
    }
  }

  let nextRun = 0
  const worker = async (): Promise<void> => {
    while (nextRun < RUNS) {
      const r = nextRun++
      const runId = `soak-${r}`
      const made = await send(app, 'POST', '/v1/runs', {
        runId,
        toolExecution: pick(['safeParallel', 'parallel', 'sequential'] as const),
        maxConcurrentTools: 4,
        limits: { exactToolRepeatTerminationThreshold: 0, cycleTerminationRepetitions: 0, consecutiveErrorTermination: 0, noProgressTermination: 0 }
      })
      if (made.status !== 201) { unexpected(`create ${runId}: ${made.status} ${made.text.slice(0, 200)}`); continue }
      for (let b = 0; b < BATCHES_PER_RUN; b++) {
        const calls: Call[] = Array.from({ length: 1 + Math.floor(rand() * 6) }, (_, i) => ({
          id: `${runId}-${b}-${i}`,
          name: pick(['read', 'read', 'write', 'keyed', 'act']),
          arguments: { x: Math.floor(rand() * 4), k: `${r}:${b}:${i}` }
        }))
        await runBatch(runId, `${runId}-b${b}`, calls)
      }
      // Most orchestrators end their runs; the rest are left to eviction.
      if (rand() < 0.8) {
        const ended = await send(app, 'DELETE', `/v1/runs/${runId}`)
        if (ended.status !== 200) unexpected(`end ${runId}: ${ended.status} ${ended.text.slice(0, 200)}`)
      }
    }
  }

  // Warm up (JIT, pools, caches) before the heap is measured.
  await Promise.all(Array.from({ length: 4 }, () => (async () => {
    const id = `warm-${Math.random()}`
    await send(app, 'POST', '/v1/runs', { runId: id })
    for (let b = 0; b < 5; b++) await send(app, 'POST', `/v1/runs/${id}/batches`, { calls: [{ id: 'w', name: 'read', arguments: { x: b } }] })
    await send(app, 'DELETE', `/v1/runs/${id}`)
  })()))
  gc()
  const heapBefore = process.memoryUsage().heapUsed
  const started = performance.now()
  await Promise.all(Array.from({ length: WORKERS }, worker))
  const seconds = (performance.now() - started) / 1000
  // Let executor handlers that outlived their timeouts finish before counting.
  await sleep(TOOL_TIMEOUT_MS * 3)

  // ---- what reached the executor ----
  const soakCalls = ex.calls.filter((c) => c.runId.startsWith('soak-'))
  const byKey = new Map<string, number>()
  const byCallId = new Map<string, number>()
  for (const c of soakCalls) {
    byKey.set(`${c.idempotencyKey ?? ''}|${c.callId}`, (byKey.get(`${c.idempotencyKey ?? ''}|${c.callId}`) ?? 0) + 1)
    byCallId.set(c.callId, (byCallId.get(c.callId) ?? 0) + 1)
  }
  const writes = soakCalls.filter((c) => c.tool !== 'read')
  const duplicateWrites = writes.filter((c) => (byKey.get(`${c.idempotencyKey ?? ''}|${c.callId}`) ?? 0) > 1 || (byCallId.get(c.callId) ?? 0) > 1).length
  const duplicateReads = soakCalls.filter((c) => c.tool === 'read' && (byCallId.get(c.callId) ?? 0) > 1).length
  const missingKey = writes.filter((c) => c.idempotencyKey === undefined || c.idempotencyKey !== c.operationId).length
  // A call the executor saw must have been answered as dispatched, not as refused or skipped.
  const seenButNotDispatched = soakCalls.filter((c) => !['ok', 'error', 'uncertain'].includes(resultOf.get(c.callId) ?? 'missing')).length
  const dispatches = soakCalls.length

  // The executor's own records are the test's memory, not the service's: drop them before measuring.
  soakCalls.length = 0
  ex.calls.length = 0
  byKey.clear()
  byCallId.clear()
  gc()
  const heapAfter = process.memoryUsage().heapUsed

  const statusCounts: Record<string, number> = {}
  for (const s of resultOf.values()) statusCounts[s] = (statusCounts[s] ?? 0) + 1
  const faults = injected.slow + injected.timeout + injected.reset + injected.http5xx + injected.http4xx

  t.comment(`soak: ${figures.batches} batches across ${RUNS} runs, ${figures.calls} calls, ${dispatches} dispatches in ${seconds.toFixed(1)} s`)
  t.comment(`faults injected: ${faults} (${JSON.stringify(injected)})`)
  t.comment(`resubmissions: ${figures.resubmissions} after the answer, ${figures.concurrentResubmissions} while running`)
  t.comment(`results: ${JSON.stringify(statusCounts)}`)
  t.comment(`causes: ${JSON.stringify(Object.fromEntries(causes))}`)
  t.comment(`results lost: ${figures.lost}, duplicates: ${duplicateWrites} writes, ${duplicateReads} reads`)
  t.comment(`heap: ${(heapBefore / 2 ** 20).toFixed(1)} MiB before, ${(heapAfter / 2 ** 20).toFixed(1)} MiB after`)

  t.same(figures.unexpected, [], 'every batch was answered 200 (or run_busy to a concurrent duplicate)')
  t.ok(figures.batches >= 2000, `at least 2,000 batches (${figures.batches})`)
  t.equal(figures.lost, 0, 'results lost: 0')
  t.equal(figures.mismatched, 0, 'results in source order, one per call')
  t.equal(figures.malformed, 0, 'every result has a known status and string content')
  t.equal(resultOf.size, figures.calls, 'exactly one result per call id')
  t.equal(figures.replayDiffers, 0, 'a resubmission answers exactly the first answer')
  t.equal(duplicateWrites, 0, 'no write reached the executor twice (by Idempotency-Key and call id)')
  t.equal(duplicateReads, 0, 'no read was dispatched twice either')
  t.equal(missingKey, 0, 'every write carried its operation id as Idempotency-Key')
  t.equal(seenButNotDispatched, 0, 'every call the executor saw was answered as dispatched')
  t.ok(injected.timeout > 0 && injected.reset > 0 && injected.http5xx > 0 && injected.slow > 0, 'every kind of fault happened')
  t.ok((statusCounts.uncertain ?? 0) > 0 && (statusCounts.blocked ?? 0) > 0, 'faults made writes uncertain, and later writes blocked')

  // ---- bounded ----
  const held = await app.services.store.countRuns()
  t.ok(held.total <= MAX_RUNS, `runs held stay within TOOLGATE_MAX_RUNS (${held.total} <= ${MAX_RUNS}): eviction happened`)
  t.equal(held.inFlight, 0, 'no run is left leased')
  t.equal(app.services.engine.inFlight, 0, 'no batch is left in flight')
  t.ok(heapAfter - heapBefore < HEAP_GROWTH_BOUND, `the heap grew by less than ${HEAP_GROWTH_BOUND / 2 ** 20} MiB (${((heapAfter - heapBefore) / 2 ** 20).toFixed(1)} MiB)`)

  // ---- healthy ----
  t.equal((await send(app, 'GET', '/healthz')).status, 200)
  t.equal((await send(app, 'GET', '/readyz')).status, 200)
  t.equal((await send(app, 'GET', '/metrics')).status, 200)
  ex.on('read', () => ({ content: 'fine' }))
  t.equal((await send(app, 'POST', '/v1/runs', { runId: 'after' })).status, 201)
  const after = await send(app, 'POST', '/v1/runs/after/batches', { calls: [{ id: 'z', name: 'read', arguments: { x: 1 } }] })
  t.equal(after.status, 200)
  t.equal(JSON.parse(after.text).results[0].status, 'ok', 'a fresh batch runs normally after the soak')
})
