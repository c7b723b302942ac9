/**
 * The cost of a tenant-scoped conflict key (SPEC section 17) against a
 * run-scoped one: one-call batches of a write with a conflict key, sent one
 * at a time to an in-process toolgate (app.inject, so no HTTP client cost),
 * the executor a real HTTP server on 127.0.0.1:0 answering at once. On the
 * memory store and on Redis (TOOLGATE_BENCH_REDIS, default database 5,
 * flushed before and after), with the Redis round trips per batch counted
 * by the store's client. Run: `npm run build && node dist/bench/tenant-keys.js [batches]`.
 */
import { createServer } from 'node:http'
import { performance } from 'node:perf_hooks'
import { buildApp } from '../src/app.js'
import { defaultConfig } from '../src/config.js'
import { KeyRing } from '../src/auth/keys.js'
import { createLogger } from '../src/logger.js'
import { RedisStore } from '../src/store/redis.js'
import { openBenchRedis } from './redis.js'
import { median } from './stats.js'

interface Row { store: string, scope: string, batches: number, p50Ms: number, p90Ms: number, batchesPerSec: number, roundTripsPerBatch: number | null }

async function startExecutor (): Promise<{ url: string, close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"content":"ok"}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

async function measure (storeName: string, redisUrl: string | null, scope: 'run' | 'tenant', executorUrl: string, batches: number): Promise<Row> {
  const config = defaultConfig({ logLevel: 'warn', ...(redisUrl === null ? {} : { store: redisUrl }) })
  const redis = redisUrl === null ? undefined : new RedisStore({ url: redisUrl, runTtlMs: 3_600_000, maxRuns: 100_000, receiptRetentionMs: 60_000 })
  const app = await buildApp(config, { keys: new KeyRing(), logger: createLogger('warn'), ...(redis === undefined ? {} : { store: redis }) })
  app.services.tools.put({
    name: 'edit',
    inputSchema: { type: 'object', properties: { k: { type: 'string' } } },
    executor: { url: `${executorUrl}/tools/edit` },
    conflictKey: 'file:{/k}',
    conflictScope: scope
  })
  const run = JSON.parse((await app.inject({ method: 'POST', url: '/v1/runs', payload: { limits: { exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 0, maxToolCalls: null } } })).body) as { runId: string }
  const send = async (i: number): Promise<number> => {
    const t0 = performance.now()
    const res = await app.inject({ method: 'POST', url: `/v1/runs/${run.runId}/batches`, payload: { calls: [{ id: `c${i}`, name: 'edit', arguments: { k: `f${i % 8}` } }] } })
    const ms = performance.now() - t0
    const body = JSON.parse(res.body) as { results: Array<{ status: string }> }
    if (body.results[0]?.status !== 'ok') throw new Error(`a call was ${body.results[0]?.status ?? res.statusCode}`)
    return ms
  }
  for (let i = 0; i < Math.min(100, batches); i++) await send(i)
  const before = redis?.traffic()
  const times: number[] = []
  const t0 = performance.now()
  for (let i = 0; i < batches; i++) times.push(await send(batches + i))
  const wall = performance.now() - t0
  const after = redis?.traffic()
  await app.close()
  times.sort((a, b) => a - b)
  return {
    store: storeName,
    scope,
    batches,
    p50Ms: round(median(times)),
    p90Ms: round(times[Math.floor(times.length * 0.9)]!),
    batchesPerSec: Math.round(batches / (wall / 1000)),
    roundTripsPerBatch: before === undefined || after === undefined ? null : round((after.roundTrips - before.roundTrips) / batches)
  }
}

function round (n: number): number {
  return Math.round(n * 100) / 100
}

const batches = Number(process.argv[2] ?? 1000)
const executor = await startExecutor()
const rows: Row[] = []
try {
  for (const scope of ['run', 'tenant'] as const) rows.push(await measure('memory', null, scope, executor.url, batches))
  const redis = await openBenchRedis()
  if ('url' in redis) {
    await redis.flush()
    try {
      for (const scope of ['run', 'tenant'] as const) rows.push(await measure('redis', redis.url, scope, executor.url, batches))
    } finally {
      await redis.flush()
      await redis.close()
    }
  } else {
    console.log(`no Redis (${redis.unavailable}): the memory store only`)
  }
} finally {
  await executor.close()
}
console.log('| store | conflictScope | batches | p50 ms | p90 ms | batches/s | Redis round trips per batch |')
console.log('| --- | --- | --- | --- | --- | --- | --- |')
for (const r of rows) console.log(`| ${r.store} | ${r.scope} | ${r.batches} | ${r.p50Ms} | ${r.p90Ms} | ${r.batchesPerSec} | ${r.roundTripsPerBatch ?? '–'} |`)
