/**
 * The write-ahead rows (SPEC section 17, issue #40): what recording a
 * batch's writes before sending them costs, on each store. toolgate runs in
 * this process (as bench/toolgate.ts starts it) against a local executor
 * that answers at once; batches of 1 and 10 reads (no record) and of 1 and
 * 10 writes (one record per epoch: all 10 in one) are sent one after
 * another to one run. Prints a Markdown table: client-observed median and
 * p90 per batch, Redis round trips and commands per batch.
 *
 *   npm run build && node dist/bench/write-ahead.js [batches per row, default 400]
 *
 * Redis: TOOLGATE_BENCH_REDIS (default database 5 on 127.0.0.1), flushed
 * before and after; without one, the memory store's rows only.
 */
import Fastify from 'fastify'
import { performance } from 'node:perf_hooks'
import { openBenchRedis } from './redis.js'
import { BENCH_KEY } from './settings.js'
import { startToolgate } from './toolgate.js'

const BATCHES = Number(process.argv[2] ?? 400)
const WARM_UP = 50

const executor = Fastify({ logger: false })
executor.post('/tools/:tool', async () => ({ content: 'ok' }))
const executorUrl = await executor.listen({ host: '127.0.0.1', port: 0 })
const redis = await openBenchRedis()
const stores: Array<[string, string]> = [['memory', 'memory']]
if ('url' in redis) {
  await redis.flush()
  stores.push(['Redis', redis.url])
}

const rows: string[] = ['| store | batch | median µs | p90 µs | Redis round trips per batch | Redis commands per batch |', '| --- | --- | --- | --- | --- | --- |']
try {
  for (const [label, store] of stores) {
    const tg = await startToolgate(executorUrl, 'warn', store)
    try {
      for (const [name, tool, size] of [['1 read', 's_read', 1], ['1 write', 's_write_open', 1], ['10 reads', 's_read', 10], ['10 writes', 's_write_open', 10]] as const) {
        const runId = `bench-wal-${label}-${size}-${tool}`
        await send(tg.url, '/v1/runs', { runId, maxConcurrentTools: 10 })
        const batch = (n: number): unknown => ({ batchId: `b${n}`, calls: Array.from({ length: size }, (_, i) => ({ id: `c${i}`, name: tool, arguments: { ms: 0, n: n * 100 + i } })) })
        for (let n = 0; n < WARM_UP; n++) await send(tg.url, `/v1/runs/${runId}/batches`, batch(n))
        const before = tg.traffic()
        const times: number[] = []
        for (let n = WARM_UP; n < WARM_UP + BATCHES; n++) {
          const t0 = performance.now()
          await send(tg.url, `/v1/runs/${runId}/batches`, batch(n))
          times.push(performance.now() - t0)
        }
        const after = tg.traffic()
        times.sort((a, b) => a - b)
        const at = (q: number): number => Math.round(times[Math.floor(q * (times.length - 1))]! * 1000)
        const per = (k: 'roundTrips' | 'commands'): string => label === 'memory' ? '–' : ((after[k] - before[k]) / BATCHES).toFixed(2)
        rows.push(`| ${label} | ${name} | ${at(0.5)} | ${at(0.9)} | ${per('roundTrips')} | ${per('commands')} |`)
      }
    } finally {
      await tg.app.close()
    }
  }
} finally {
  await executor.close()
  if ('url' in redis) await redis.flush().finally(() => redis.close())
}
console.log(rows.join('\n'))

async function send (url: string, path: string, body: unknown): Promise<void> {
  const res = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_KEY}` }, body: JSON.stringify(body) })
  const text = await res.text()
  if (res.status !== 200 && res.status !== 201) throw new Error(`${path} answered ${res.status}: ${text}`)
  if (path.endsWith('/batches') && !text.includes('"status":"ok"')) throw new Error(`${path}: a call was not ok: ${text.slice(0, 300)}`)
}
