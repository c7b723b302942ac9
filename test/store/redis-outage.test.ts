/**
 * A Redis of the test's own (redis-server on a free port) is killed under a
 * running app: /readyz says so, batches get 503 overloaded and nothing is
 * dispatched; when Redis is back, so is the service.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { Redis } from 'ioredis'
import { RedisStore } from '../../src/store/redis.js'
import { buildTestApp, freePort, get, post, sleep, startExecutor, tool } from '../helper.js'

const noServer = spawnSync('redis-server', ['--version']).status === 0 ? false : 'redis-server is not installed here'
if (noServer !== false) t.comment(`Redis outage test skipped: ${noServer}`)


/** Starts redis-server without persistence and waits until it answers. */
async function startRedis (port: number, dir: string): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' })
  const client = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  client.on('error', () => {})
  try {
    for (let i = 0; i < 100; i++) {
      try {
        await client.connect()
        await client.ping()
        return child
      } catch {
        client.disconnect()
        await sleep(50)
      }
    }
    throw new Error(`redis-server did not answer on port ${port}`)
  } finally {
    client.disconnect()
  }
}

async function stop (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

t.test('while Redis is unreachable /readyz answers 503 and batches get 503 overloaded without dispatching', { skip: noServer }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-redis-'))
  const port = await freePort()
  let redis = await startRedis(port, dir)
  t.teardown(async () => {
    await stop(redis)
    rmSync(dir, { recursive: true, force: true })
  })
  const ex = await startExecutor(t)
  const store = new RedisStore({ url: `redis://127.0.0.1:${port}`, runTtlMs: 60_000, maxRuns: 100, receiptRetentionMs: 60_000, commandTimeoutMs: 2000 })
  const { app } = await buildTestApp(t, { store, tools: [tool('build', ex.url)] })

  const storeUp = async (): Promise<string | undefined> => /^toolgate_store_up (\d)$/m.exec((await app.inject({ url: '/metrics' })).body)?.[1]
  t.same((await get(app, '/readyz')).body, { status: 'ready' })
  t.equal(await storeUp(), '1', 'the store is up, says /metrics')
  t.equal((await post(app, '/v1/runs', { runId: 'r1' })).status, 201)
  t.equal((await post(app, '/v1/runs/r1/batches', { batchId: 'b1', calls: [{ id: 'c1', name: 'build', arguments: { x: 1 } }] })).status, 200)
  t.equal(ex.calls.length, 1)

  await stop(redis)
  const ready = await get(app, '/readyz')
  t.equal(ready.status, 503)
  t.same(ready.body, { status: 'store_unavailable' })
  t.equal(await storeUp(), '0', 'and that it is down, while the scrape itself answers')
  const batch = await post(app, '/v1/runs/r1/batches', { batchId: 'b2', calls: [{ id: 'c2', name: 'build', arguments: { x: 2 } }] })
  t.equal(batch.status, 503)
  t.match(batch.headers['content-type'], /application\/problem\+json/)
  t.equal(batch.body.code, 'overloaded')
  t.equal((await post(app, '/v1/runs', { runId: 'r2' })).body.code, 'overloaded', 'creating a run is refused the same way')
  t.equal(ex.calls.length, 1, 'nothing was dispatched while the store was away')

  redis = await startRedis(port, dir)
  let status = 0
  for (let i = 0; i < 100 && status !== 200; i++) {
    status = (await get(app, '/readyz')).status
    if (status !== 200) await sleep(100)
  }
  t.equal(status, 200, 'ready again once Redis is back')
  t.equal(await storeUp(), '1')
  // This Redis kept nothing (no persistence): the service works again from scratch.
  t.equal((await post(app, '/v1/runs', { runId: 'r3' })).status, 201)
  t.equal((await post(app, '/v1/runs/r3/batches', { calls: [{ id: 'c3', name: 'build', arguments: { x: 3 } }] })).status, 200)
  t.equal(ex.calls.length, 2)
})
