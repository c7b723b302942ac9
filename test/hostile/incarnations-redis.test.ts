/**
 * The red team's first case on the Redis store, against a real service
 * process (the hostile suite, ./bounds.test.ts, runs the memory store): a
 * run id reused by another tenant after the run expired sees nothing of the
 * earlier run, whose receipt stays its own tenant's. No answer is a 5xx.
 * Skipped, saying why, when no Redis answers at TOOLGATE_TEST_REDIS_URL.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { startExecutor, tool } from '../helper.js'
import { REDIS_URL, deleteByPrefix, redisUnavailable } from '../store/harness.js'
import { buildToolgate, startReplica } from '../replicas/processes.js'
import { type Answer, callAs } from './call-as.js'

const CANARY = 'canary-secret-of-acme-9127'
const KEYS = { acme: 'acme-orchestrator-key-0123456789', delta: 'delta-orchestrator-key-012345678' } as const

const noRedis = await redisUnavailable()
if (noRedis !== undefined) {
  t.plan(0, `Redis incarnation case skipped: ${noRedis}`)
} else {
  t.test("a run id reused after its run expired on Redis, by another tenant, sees nothing of the earlier run", async (t) => {
    const prefix = `toolgate-test:${randomUUID()}:`
    t.teardown(() => deleteByPrefix(prefix))
    const ex = await startExecutor(t)
    ex.on('act', (c) => ({ status: 'committed', result: { echo: c.arguments } }))
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-incarnations-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    writeFileSync(join(dir, 'tools.json'), JSON.stringify({ tools: [tool('act', ex.url, { action: {} })] }))
    writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys: (['acme', 'delta'] as const).map((tenant) => ({ key: KEYS[tenant], tenant, roles: ['orchestrator'] })) }))
    const svc = await startReplica(t, buildToolgate(), 'incarnations', {
      TOOLGATE_STORE: `${REDIS_URL}?prefix=${encodeURIComponent(prefix)}`,
      TOOLGATE_TOOLS_FILE: join(dir, 'tools.json'),
      TOOLGATE_API_KEYS_FILE: join(dir, 'keys.json'),
      TOOLGATE_RUN_TTL_SECONDS: '1'
    })
    const statuses: number[] = []
    const call = (who: keyof typeof KEYS, method: string, path: string, body?: unknown): Promise<Answer> => callAs(svc, KEYS[who], statuses, method, path, body)

    t.equal((await call('acme', 'POST', '/v1/runs', { runId: 'shared' })).status, 201)
    const first = await call('acme', 'POST', '/v1/runs/shared/batches', { batchId: 'b1', calls: [{ id: 'a', name: 'act', arguments: { note: CANARY } }] })
    t.equal(first.body.results[0].status, 'ok')
    const operationId = (await call('acme', 'GET', '/v1/runs/shared/receipts')).body.receipts[0].operationId as string
    // The run's idle time-to-live is 1 s: wait (bounded) until it is gone.
    for (let i = 0; i < 100 && (await call('acme', 'GET', '/v1/runs/shared')).status === 200; i++) await new Promise((resolve) => setTimeout(resolve, 100))
    t.equal((await call('acme', 'GET', '/v1/runs/shared')).status, 404, 'the earlier run expired')

    t.equal((await call('delta', 'POST', '/v1/runs', { runId: 'shared' })).status, 201)
    t.same((await call('delta', 'GET', '/v1/runs/shared/receipts')).body, { receipts: [] }, "the new run lists none of the earlier run's receipts")
    t.same((await call('delta', 'GET', '/v1/runs/shared/batches')).body.batches, [], 'nor its batches')
    const replay = await call('delta', 'POST', '/v1/runs/shared/batches', { batchId: 'b1', calls: [{ id: 'a', name: 'act', arguments: { note: 'mine' } }] })
    t.equal(replay.status, 200)
    t.notMatch(JSON.stringify(replay.body), CANARY, 'a resent batch id runs anew, replaying nothing of the earlier run')
    t.equal((await call('delta', 'GET', `/v1/receipts/${operationId}`)).status, 404, "the earlier receipt is not the new tenant's")
    const own = await call('acme', 'GET', `/v1/receipts/${operationId}`)
    t.equal(own.status, 200, 'it stays reachable by operation id to its own tenant')
    t.match(JSON.stringify(own.body), CANARY)
    t.same(statuses.filter((s) => s >= 500), [], 'no answer was a 5xx')
    t.equal(svc.process.exitCode, null, 'the service did not exit')
    t.notMatch(svc.output.join('\n'), CANARY, 'no argument in its logs')
  })
}
