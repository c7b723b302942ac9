/**
 * Write-ahead records across replicas (SPEC section 17): replica A is
 * SIGKILLed while a plain write it sent is at the executor. The
 * orchestrator resends the batch (same batchId) to replica B once A's lease
 * passed: the lost write is answered `uncertain` (cause `replica_lost`) and
 * not sent again, the call that had not started runs; the model's retry of
 * the write under a new call id is `blocked`. The executor sees the write
 * once. Skipped, saying why, when no Redis answers at TOOLGATE_TEST_REDIS_URL.
 */
import { randomUUID } from 'node:crypto'
import { rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { sleep, startExecutor, tool } from '../helper.js'
import { REDIS_URL, deleteByPrefix, redisUnavailable } from '../store/harness.js'
import { type Answer, type Replica, buildToolgate, call, startReplica } from './processes.js'

const LEASE_MS = 2000
// Two replicas built and started on a loaded 2-core machine: bounded work, not a deadline.
t.setTimeout(300_000)

const noRedis = await redisUnavailable()
if (noRedis !== undefined) {
  t.plan(0, `write-ahead replica test skipped: ${noRedis}`)
} else {
  t.test('a write in flight when its replica dies is uncertain (replica_lost) on the resend, never sent again; what had not started runs; the retry is blocked', async (t) => {
    const prefix = `toolgate-test:${randomUUID()}:`
    t.teardown(() => deleteByPrefix(prefix))
    const ex = await startExecutor(t)
    let arrived: () => void = () => {}
    const first = new Promise<void>((resolve) => { arrived = resolve })
    const hung: Array<() => void> = []
    t.teardown(() => { for (const h of hung) h() })
    // The first payment is applied on arrival and its answer never comes: its replica dies meanwhile.
    ex.on('pay', async () => {
      if (ex.calls.filter((c) => c.tool === 'pay').length === 1) {
        arrived()
        await new Promise<void>((resolve) => hung.push(resolve))
      }
      return { content: { paid: true } }
    })
    const toolsFile = join(tmpdir(), `toolgate-wal-tools-${randomUUID()}.json`)
    writeFileSync(toolsFile, JSON.stringify({
      tools: [tool('pay', ex.url, { conflictKey: 'acct:{/acct}' }), tool('look', ex.url, { readOnly: true })]
    }))
    t.teardown(() => rmSync(toolsFile, { force: true }))
    const server = buildToolgate()
    const env = { TOOLGATE_STORE: `${REDIS_URL}?prefix=${encodeURIComponent(prefix)}`, TOOLGATE_TOOLS_FILE: toolsFile, TOOLGATE_LEASE_MS: String(LEASE_MS) }
    const [a, b] = await Promise.all([startReplica(t, server, 'A', env), startReplica(t, server, 'B', env)])

    t.equal((await call(a, 'POST', '/v1/runs', { runId: 'wal' })).status, 201)
    // Same key: c1 then c2, one epoch each.
    const batch = { batchId: 'b1', calls: [{ id: 'c1', name: 'pay', arguments: { acct: 'a', amount: 5 } }, { id: 'c2', name: 'pay', arguments: { acct: 'a', amount: 7 } }] }
    const lost = call(a, 'POST', '/v1/runs/wal/batches', batch).catch((err: unknown) => err)
    await first
    await a.kill()
    t.type(await lost, Error, "A's answer never came")

    const resent = await resend(b, batch)
    t.equal(resent.status, 200)
    const [c1, c2] = resent.body.results
    t.match(c1, { callId: 'c1', status: 'uncertain', isError: true, details: { cause: 'replica_lost' } })
    t.match(c2, { callId: 'c2', status: 'ok' })
    const pays = ex.calls.filter((c) => c.tool === 'pay')
    t.same(pays.map((c) => c.callId), ['c1', 'c2'], 'c1 was sent once, c2 (never started) once')

    const listed = await call(b, 'GET', '/v1/runs/wal/uncertain')
    t.match(listed.body.uncertain, [{ callId: 'c1', batchId: 'b1', tool: 'pay', operationId: c1.details.operationId }])

    const again = await resend(b, batch)
    t.same(again.body, resent.body, 'resent once more: the stored answer')

    const retry = await call(b, 'POST', '/v1/runs/wal/batches', { batchId: 'b2', calls: [{ id: 'c3', name: 'pay', arguments: { acct: 'a', amount: 5 } }, { id: 'c4', name: 'look', arguments: { acct: 'a' } }] })
    t.equal(retry.status, 200)
    t.match(retry.body.results[0], { callId: 'c3', status: 'blocked', details: { reason: 'unresolved_uncertain_write', blockedBy: 'c1', blockedByOperation: c1.details.operationId } })
    t.equal(retry.body.results[1].status, 'ok', 'the read went on')
    t.equal(ex.calls.filter((c) => c.tool === 'pay').length, 2, 'the retry was not sent')
    t.notOk(b.output.join('\n').includes('"amount"'), 'no arguments in the logs')
  })
}

/** The orchestrator's recovery: the same batch again, to a live replica, until the dead one's lease has passed. */
async function resend (replica: Replica, batch: unknown): Promise<Answer> {
  for (let i = 0; i < 200; i++) {
    const answer = await call(replica, 'POST', '/v1/runs/wal/batches', batch)
    if (answer.status !== 409 || answer.body?.code !== 'run_busy') return answer
    await sleep(100)
  }
  throw new Error('the run stayed busy')
}
