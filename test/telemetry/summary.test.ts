import t from 'tap'
import { buildTestApp, get, post, sleep, startExecutor, tool } from '../helper.js'

const OVERLAP = 4
const CALL_MS = 100

t.test('the run and aggregate summaries add up the figures of known batches', async (t) => {
  const ex = await startExecutor(t)
  // The reads of the first batch all wait until every one has arrived, so they surely overlap.
  let arrived = 0
  let release!: () => void
  const gate = new Promise<void>((resolve) => { release = resolve })
  ex.on('look', async () => {
    if (++arrived === OVERLAP) release()
    await gate
    await sleep(CALL_MS)
    return { content: 'seen' }
  })
  ex.on('flaky', (_c, _r, reply) => reply.code(500).send({}))
  ex.on('build', () => ({ status: 'committed', result: { label: 'Wall' } }))
  ex.on('peek', () => ({ content: 'peeked' }))
  const { app } = await buildTestApp(t, {
    tools: [
      tool('look', ex.url, { readOnly: true }),
      tool('peek', ex.url, { readOnly: true }),
      tool('poke', ex.url),
      tool('flaky', ex.url),
      tool('build', ex.url, { action: { projection: '$string(1)', maxModelReceiptChars: 4096 } })
    ]
  })

  const zero = { advisories: 0, terminations: 0 }
  const empty = await post(app, '/v1/runs', { runId: 's0' })
  t.equal(empty.status, 201)
  t.same((await get(app, '/v1/runs/s0/summary')).body, {
    runId: 's0', state: 'active', turns: 0, calls: 0, callsByStatus: {}, epochs: 0, largestEpoch: 0, toolTimeMs: 0, wallTimeMs: 0, timeSavedMs: 0,
    repeatAdvisories: 0, repeatTerminations: 0, projectionFailures: 0, uncertainWrites: 0, blockedCalls: 0,
    loopDetections: { exact: zero, cycle: zero, errors: zero, no_progress: zero },
    approvals: { approved: 0, denied: 0, expired: 0 }
  }, 'a run without batches has an all-zero summary')

  // s1, batch 1: four overlapping reads (epoch 0), a write (epoch 1), an unknown tool (rejected).
  await post(app, '/v1/runs', { runId: 's1' })
  const reads = Array.from({ length: OVERLAP }, (_, i) => ({ id: `r${i}`, name: 'look', arguments: { x: i } }))
  let res = await post(app, '/v1/runs/s1/batches', { calls: [...reads, { id: 'w', name: 'poke', arguments: {} }, { id: 'u', name: 'nope', arguments: {} }] })
  t.equal(res.status, 200)
  // s1, batch 2: an uncertain write, then a write it blocks (two barrier epochs).
  res = await post(app, '/v1/runs/s1/batches', { calls: [{ id: 'f', name: 'flaky', arguments: {} }, { id: 'p', name: 'poke', arguments: {} }] })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['uncertain', 'blocked'])

  const s1 = (await get(app, '/v1/runs/s1/summary')).body
  t.match(s1, {
    runId: 's1',
    state: 'active',
    turns: 2,
    calls: 8,
    callsByStatus: { ok: 5, rejected: 1, uncertain: 1, blocked: 1 },
    epochs: 4,
    largestEpoch: OVERLAP,
    repeatAdvisories: 0,
    repeatTerminations: 0,
    projectionFailures: 0,
    uncertainWrites: 1,
    blockedCalls: 1
  })
  t.same(Object.keys(s1.callsByStatus).sort(), ['blocked', 'ok', 'rejected', 'uncertain'])
  t.ok(s1.toolTimeMs >= OVERLAP * CALL_MS, `time in tools counts every call's own time (${s1.toolTimeMs} ms)`)
  t.ok(s1.wallTimeMs >= CALL_MS, `wall time covers the batches (${s1.wallTimeMs} ms)`)
  t.ok(Math.abs(s1.timeSavedMs - Math.max(0, s1.toolTimeMs - s1.wallTimeMs)) < 0.01, 'time saved is time in tools minus wall time')
  t.ok(s1.timeSavedMs > 0, `overlapping reads saved time (${s1.timeSavedMs} ms)`)

  // s2: the 2nd identical call is advised about, the 3rd terminates the run.
  await post(app, '/v1/runs', { runId: 's2', limits: { exactToolRepeatAdvisoryThreshold: 2, exactToolRepeatTerminationThreshold: 3 } })
  const same = { name: 'peek', arguments: { k: 'same' } }
  res = await post(app, '/v1/runs/s2/batches', { calls: [{ id: 'a', ...same }, { id: 'b', ...same }, { id: 'c', ...same }] })
  t.equal(res.body.run.state, 'terminated')
  const s2 = (await get(app, '/v1/runs/s2/summary')).body
  t.match(s2, { state: 'terminated', turns: 1, calls: 3, callsByStatus: { ok: 2, terminated: 1 }, epochs: 1, largestEpoch: 2, repeatAdvisories: 1, repeatTerminations: 1 })

  // s3: a projection that gives no object closes the batch.
  await post(app, '/v1/runs', { runId: 's3' })
  res = await post(app, '/v1/runs/s3/batches', { calls: [{ id: 'a', name: 'build', arguments: { x: 1 } }] })
  t.equal(res.body.results[0].status, 'projection_failed')
  const s3 = (await get(app, '/v1/runs/s3/summary')).body
  t.match(s3, { state: 'terminated', turns: 1, calls: 1, callsByStatus: { projection_failed: 1 }, epochs: 1, largestEpoch: 1, projectionFailures: 1 })

  const all = (await get(app, '/v1/summary')).body
  t.type(all.since, 'string')
  t.ok(!Number.isNaN(Date.parse(all.since)))
  t.match(all, {
    runs: 4,
    turns: 4,
    calls: 12,
    callsByStatus: { ok: 7, rejected: 1, uncertain: 1, blocked: 1, terminated: 1, projection_failed: 1 },
    epochs: 6,
    largestEpoch: OVERLAP,
    repeatAdvisories: 1,
    repeatTerminations: 1,
    projectionFailures: 1,
    uncertainWrites: 1,
    blockedCalls: 1
  })
  t.ok(Math.abs(all.toolTimeMs - (s1.toolTimeMs + s2.toolTimeMs + s3.toolTimeMs)) < 0.01, 'the aggregate time in tools is the sum of the runs')
  t.ok(Math.abs(all.wallTimeMs - (s1.wallTimeMs + s2.wallTimeMs + s3.wallTimeMs)) < 0.01, 'and so is the wall time')
  t.equal(all.runId, undefined)
})

t.test("a run's summary is its tenant's; the aggregate needs the operator role", async (t) => {
  const { app } = await buildTestApp(t, {
    keysDoc: {
      keys: [
        { key: 'acme-orchestrator-0123456789', tenant: 'acme', roles: ['orchestrator'] },
        { key: 'other-orchestrator-0123456789', tenant: 'other', roles: ['orchestrator'] },
        { key: 'ops-operator-0123456789abcdef', tenant: 'ops', roles: ['operator'] }
      ]
    }
  })
  const acme = { authorization: 'Bearer acme-orchestrator-0123456789' }
  t.equal((await post(app, '/v1/runs', { runId: 'mine' }, acme)).status, 201)
  t.equal((await get(app, '/v1/runs/mine/summary', acme)).status, 200)
  const foreign = await get(app, '/v1/runs/mine/summary', { authorization: 'Bearer other-orchestrator-0123456789' })
  t.equal(foreign.status, 404)
  t.equal(foreign.body.code, 'run_not_found')
  t.equal((await get(app, '/v1/runs/mine/summary')).status, 401)
  t.equal((await get(app, '/v1/summary', acme)).status, 403)
  const ops = await get(app, '/v1/summary', { authorization: 'Bearer ops-operator-0123456789abcdef' })
  t.equal(ops.status, 200)
  t.equal(ops.body.runs, 1)
})
