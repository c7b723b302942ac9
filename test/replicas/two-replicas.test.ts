/**
 * Two real toolgate processes on one Redis behave as one service. Skipped,
 * saying why, when no Redis answers at TOOLGATE_TEST_REDIS_URL.
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

const noRedis = await redisUnavailable()
if (noRedis !== undefined) {
  t.plan(0, `two-replica tests skipped: ${noRedis}`)
} else {
  await replicas()
}

/** A gate an executor call waits at until the test opens it. */
function gate (): { wait: Promise<void>, open: () => void } {
  let open: () => void = () => {}
  const wait = new Promise<void>((resolve) => { open = resolve })
  return { wait, open }
}

async function until (what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return
    await sleep(25)
  }
  throw new Error(`timed out waiting for ${what}`)
}

async function replicas (): Promise<void> {
  const prefix = `toolgate-test:${randomUUID()}:`
  t.teardown(() => deleteByPrefix(prefix))
  const ex = await startExecutor(t)
  const gates = new Map<string, { wait: Promise<void>, open: () => void }>()
  t.teardown(() => { for (const g of gates.values()) g.open() })
  ex.on('build', () => ({ status: 'committed', result: { label: 'Wall' } }))
  ex.on('hold', async (c) => {
    await gates.get(c.runId)?.wait
    return { content: 'held' }
  })
  // Only the first arrival of a call waits at its run's gate: the same call sent again answers at once.
  ex.on('holdonce', async (c) => {
    if (ex.calls.filter((x) => x.runId === c.runId && x.callId === c.callId).length === 1) await gates.get(c.runId)?.wait
    return { content: 'held once' }
  })
  ex.on('hold-build', async (c) => {
    await gates.get(c.runId)?.wait
    return { status: 'committed', result: { label: 'Wall' } }
  })
  const toolsFile = join(tmpdir(), `toolgate-replica-tools-${randomUUID()}.json`)
  writeFileSync(toolsFile, JSON.stringify({
    tools: [
      tool('look', ex.url, { readOnly: true }), tool('build', ex.url, { action: {} }), tool('hold', ex.url),
      tool('holdonce', ex.url), tool('poke', ex.url), tool('hold-build', ex.url, { action: {} })
    ]
  }))
  t.teardown(() => rmSync(toolsFile, { force: true }))

  const server = buildToolgate()
  const env = { TOOLGATE_STORE: `${REDIS_URL}?prefix=${encodeURIComponent(prefix)}`, TOOLGATE_TOOLS_FILE: toolsFile, TOOLGATE_LEASE_MS: String(LEASE_MS) }
  const [a, b] = await Promise.all([startReplica(t, server, 'A', env), startReplica(t, server, 'B', env)])
  const executorCalls = (runId: string, toolName: string): number => ex.calls.filter((c) => c.runId === runId && c.tool === toolName).length
  const batch = (replica: Replica, runId: string, batchId: string, calls: unknown[]) => call(replica, 'POST', `/v1/runs/${runId}/batches`, { batchId, calls })

  t.test("a run's batches alternating between replicas keep one exact-repeat streak and one turn count", async (t) => {
    const created = await call(a, 'POST', '/v1/runs', { runId: 'alt', limits: { exactToolRepeatAdvisoryThreshold: 3, exactToolRepeatTerminationThreshold: 5 } })
    t.equal(created.status, 201)
    const answers = []
    for (let turn = 1; turn <= 5; turn++) {
      const res = await batch(turn % 2 === 1 ? a : b, 'alt', `b${turn}`, [{ id: `c${turn}`, name: 'look', arguments: { x: 1 } }])
      t.equal(res.status, 200, `batch ${turn} answered`)
      answers.push(res.body)
    }
    t.same(answers.map((r) => r.turn), [1, 2, 3, 4, 5], 'one turn count across both replicas')
    t.same(answers.map((r) => r.policyMessages.length), [0, 0, 1, 0, 0], 'the advisory comes once, on the 3rd identical call')
    t.same(answers.map((r) => r.results[0].status), ['ok', 'ok', 'ok', 'ok', 'terminated'], 'the 5th identical call is not dispatched')
    t.same(answers[4].run, { state: 'terminated', terminationReason: 'exact_repeat' })
    t.equal(executorCalls('alt', 'look'), 4)
    const seen = await call(b, 'GET', '/v1/runs/alt')
    t.equal(seen.body.state, 'terminated')
    t.equal(seen.body.counters.turns, 5)
  })

  t.test('simultaneous batches of one run on both replicas: one runs, the other gets 409 run_busy', async (t) => {
    t.equal((await call(b, 'POST', '/v1/runs', { runId: 'race' })).status, 201)
    const g = gate()
    gates.set('race', g)
    const send = (replica: Replica, batchId: string) => batch(replica, 'race', batchId, [{ id: 'c1', name: 'hold', arguments: {} }])
      .then((res) => {
        if (res.status === 409) g.open()
        return res
      })
    // If both were let in, the gate would never open by itself.
    const fallback = setTimeout(() => g.open(), 5000)
    const answers = await Promise.all([send(a, 'ba'), send(b, 'bb')])
    clearTimeout(fallback)
    t.same(answers.map((r) => r.status).sort(), [200, 409])
    t.equal(answers.find((r) => r.status === 409)?.body.code, 'run_busy')
    t.equal(executorCalls('race', 'hold'), 1, 'only one batch reached the executor')
  })

  t.test('a batch or call resubmitted to the other replica is replayed, not dispatched again', async (t) => {
    t.equal((await call(a, 'POST', '/v1/runs', { runId: 'replay' })).status, 201)
    const calls = [{ id: 'c1', name: 'build', arguments: { x: 1 } }]
    const first = await batch(a, 'replay', 'b1', calls)
    t.equal(first.status, 200)
    t.equal(first.body.results[0].details.receipt.dispatch.disposition, 'dispatched')
    const again = await batch(b, 'replay', 'b1', calls)
    t.equal(again.status, 200)
    t.same(again.body, first.body, 'the other replica answers the stored response')
    t.equal(executorCalls('replay', 'build'), 1)

    const resent = await batch(b, 'replay', 'b2', calls)
    t.equal(resent.status, 200)
    t.equal(resent.body.turn, 2)
    t.equal(resent.body.results[0].details.receipt.dispatch.disposition, 'replayed', 'the same call in a new batch is answered from its receipt')
    t.equal(executorCalls('replay', 'build'), 1, 'and not dispatched again')
    const receipts = await call(a, 'GET', '/v1/runs/replay/receipts')
    t.equal(receipts.body.receipts.length, 1)
  })

  t.test('cancelling on one replica cancels the batch running on the other', async (t) => {
    t.equal((await call(a, 'POST', '/v1/runs', { runId: 'cancel' })).status, 201)
    const g = gate()
    gates.set('cancel', g)
    const running = batch(b, 'cancel', 'b1', [{ id: 'c1', name: 'hold', arguments: {} }, { id: 'c2', name: 'look', arguments: { x: 2 } }])
    await until('the held call to reach the executor', () => executorCalls('cancel', 'hold') === 1)
    const cancelled = await call(a, 'POST', '/v1/runs/cancel/cancel')
    t.equal(cancelled.body.state, 'cancelled')
    g.open()
    const res = await running
    t.equal(res.status, 200)
    t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'cancelled'], 'the call running settles; the next epoch never starts')
    t.equal(res.body.continue, false)
    t.equal(executorCalls('cancel', 'look'), 0)
  })

  t.test('a replica paused past its lease starts nothing more when it wakes, its unanswered write is uncertain (replica_lost), and the answer of the replica that took over stays the batch\'s', async (t) => {
    t.equal((await call(a, 'POST', '/v1/runs', { runId: 'pause' })).status, 201)
    const g = gate()
    gates.set('pause', g)
    const calls = [{ id: 'c1', name: 'holdonce', arguments: {} }, { id: 'c2', name: 'poke', arguments: { n: 2 } }, { id: 'c3', name: 'poke', arguments: { n: 3 } }]
    const fromA = batch(a, 'pause', 'b1', calls)
    await until('the held call to reach the executor', () => executorCalls('pause', 'holdonce') === 1)
    a.process.kill('SIGSTOP')
    let fromB: Answer | undefined
    try {
      // A's answer to c1 waits in its socket while it sleeps; its lease runs out meanwhile.
      g.open()
      for (let i = 0; i < 100 && fromB?.status !== 200; i++) {
        await sleep(LEASE_MS / 8)
        fromB = await batch(b, 'pause', 'b1', calls)
      }
    } finally {
      a.process.kill('SIGCONT')
    }
    t.equal(fromB?.status, 200, 'B resumes the batch once the paused lease has run out')
    // c1 was recorded as about to be sent (write-ahead) and A's answer to it never reached the store:
    // B cannot know whether it took effect, so it is uncertain (replica_lost), never sent again.
    t.same(fromB?.body.results.map((r: { status: string }) => r.status), ['uncertain', 'ok', 'ok'])
    t.equal(fromB?.body.results[0].details.cause, 'replica_lost')
    t.equal(executorCalls('pause', 'holdonce'), 1, 'the write A sent is not sent again by B')
    const woke = await fromA
    t.equal(woke.status, 200, 'A answers when it wakes')
    t.equal(executorCalls('pause', 'poke'), 2, 'each write was sent once, by B: A started nothing after waking')
    t.same(woke.body, fromB?.body, 'A answers what B stored')
    t.same((await batch(a, 'pause', 'b1', calls)).body, fromB?.body, 'and the stored answer is still B\'s')
    const run = await call(a, 'GET', '/v1/runs/pause')
    t.equal(run.body.counters.turns, 1)
    t.equal(run.body.counters.toolCalls, 3, 'the resumed batch\'s calls are counted once')
  })

  t.test('a batch resent after its replica was killed with an action call at the executor does not send that call again', async (t) => {
    // A replica of its own, so the others stay up for the tests after this one.
    const c = await startReplica(t, server, 'C', env)
    t.equal((await call(a, 'POST', '/v1/runs', { runId: 'killed-action' })).status, 201)
    const g = gate()
    gates.set('killed-action', g)
    const calls = [{ id: 'c1', name: 'hold-build', arguments: { x: 1 } }, { id: 'c2', name: 'build', arguments: { x: 2 } }, { id: 'c3', name: 'look', arguments: { x: 3 } }]
    void batch(c, 'killed-action', 'b1', calls).catch(() => {})
    await until('the held action to reach the executor', () => executorCalls('killed-action', 'hold-build') === 1)
    await c.kill()
    // The executor commits it after all, with nobody left to hear the answer.
    g.open()

    let answer: Answer | undefined
    for (let i = 0; i < 100; i++) {
      const res = await batch(a, 'killed-action', 'b1', calls)
      if (res.status !== 409) {
        answer = res
        break
      }
      t.equal(res.body.code, 'run_busy', 'refused while the dead replica\'s lease holds')
      await sleep(LEASE_MS / 8)
    }
    t.equal(answer?.status, 200, 'the resent batch runs once the lease has expired')
    t.equal(answer?.body.turn, 1, 'under the turn it was first given')
    const results = answer?.body.results as Array<{ callId: string, status: string, details: Record<string, any> }>
    t.same(results.map((r) => [r.callId, r.status]), [['c1', 'uncertain'], ['c2', 'blocked'], ['c3', 'ok']])
    t.match(results[0]!.details.receipt, { status: 'uncertain', result: { error: 'outcome_unknown', cause: 'no_answer_recorded' }, dispatch: { disposition: 'replayed' } })
    t.equal(results[1]!.details.blockedBy, 'c1', 'a later write waits on the action that may have happened')
    t.equal(executorCalls('killed-action', 'hold-build'), 1, 'the held action was sent once')
    t.equal(executorCalls('killed-action', 'build'), 0)
    const receipts = await call(b, 'GET', '/v1/runs/killed-action/receipts')
    t.same(receipts.body.receipts.map((r: { callId: string, status: string }) => [r.callId, r.status]), [['c1', 'uncertain']], 'the journal keeps the pending receipt')
  })

  t.test('a replica killed in the middle of a batch leaves the run usable once its lease expires', async (t) => {
    t.equal((await call(a, 'POST', '/v1/runs', { runId: 'crash' })).status, 201)
    const g = gate()
    gates.set('crash', g)
    void batch(b, 'crash', 'b1', [{ id: 'c1', name: 'hold', arguments: {} }]).catch(() => {})
    await until('the held call to reach the executor', () => executorCalls('crash', 'hold') === 1)
    await b.kill()

    const refused: number[] = []
    let answer: Answer | undefined
    for (let i = 0; i < 100; i++) {
      const res = await batch(a, 'crash', `after${i}`, [{ id: 'c2', name: 'look', arguments: { x: 3 } }])
      if (res.status !== 409) {
        answer = res
        break
      }
      t.equal(res.body.code, 'run_busy')
      refused.push(res.status)
      await sleep(LEASE_MS / 8)
    }
    t.equal(answer?.status, 200, `usable after the dead replica's lease (${refused.length} run_busy before)`)
    t.equal(answer?.body.turn, 2, "the dead replica's batch kept its turn")
    t.equal(answer?.body.results[0].status, 'ok')
    g.open()
  })
}
