import t from 'tap'
import { Writable } from 'node:stream'
import { REDACTED, REDACTED_KEYS, createLogger, redactSensitive } from '../../src/logger.js'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'

interface Line { level: number, msg: string, [key: string]: unknown }
const lines = (logs: string[]): Line[] => logs.map((l) => JSON.parse(l) as Line)

t.test("a batch's log lines are JSON lines bound to its runId and batchId", async (t) => {
  const ex = await startExecutor(t)
  const { app, logs } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true })] })
  await post(app, '/v1/runs', { runId: 'r1' })
  await post(app, '/v1/runs/r1/batches', { batchId: 'b1', calls: [{ id: 'a', name: 'look', arguments: {} }] })
  const all = lines(logs)
  t.ok(all.length > 0)
  t.ok(all.every((l) => l.service === 'toolgate' && typeof l.time === 'string'), 'every line names the service and an ISO time')
  const done = all.find((l) => l.msg === 'batch completed')
  t.match(done, { level: 30, runId: 'r1', batchId: 'b1', turn: 1, calls: 1, outcome: 'completed', method: 'POST', route: '/v1/runs/:runId/batches', status: 200 })
  t.type(done?.durationMs, 'number')
  t.type(done?.reqId, 'string')
  t.equal(all.filter((l) => l.reqId === done?.reqId && l.level >= 30).length, 1, "at info, the batch's line is its request's only line")
  const debug = all.filter((l) => l.reqId === done?.reqId && l.level === 20).map((l) => l.msg)
  t.strictSame(debug, ['batch started', 'call settled', 'epoch settled'], 'at debug, its start, each call and each epoch get a line')
  // Written as JSON text past the censor (logFields): none of its keys may be one the censor removes.
  t.same(Object.keys(done ?? {}).filter((k) => REDACTED_KEYS.has(k)), [], 'no key of the line is a censored one')

  await post(app, '/v1/runs/r1/batches', { batchId: 'b1', calls: [{ id: 'a', name: 'look', arguments: {} }] })
  const replay = lines(logs).filter((l) => l.msg === 'batch completed').at(-1)
  t.match(replay, { runId: 'r1', batchId: 'b1', replayed: true, status: 200 }, 'a replayed batch says so')
})

t.test('each request is logged once with its own request id', async (t) => {
  const { app, logs } = await buildTestApp(t)
  await get(app, '/v1/tools')
  await get(app, '/v1/tools')
  const requests = lines(logs).filter((l) => l.msg === 'request')
  t.equal(requests.length, 2)
  t.match(requests[0], { level: 30, method: 'GET', route: '/v1/tools', status: 200 })
  t.type(requests[0]?.reqId, 'string')
  t.not(requests[0]?.reqId, requests[1]?.reqId)
})

t.test('a refused request (4xx) is logged at info, a failure (5xx) at error', async (t) => {
  const { app, logs } = await buildTestApp(t)
  app.get('/test-only/boom', async () => { throw new Error('kaboom') })
  const bad = await post(app, '/v1/runs', { maxConcurrentTools: 'many' })
  t.equal(bad.status, 400)
  const refused = lines(logs).filter((l) => l.msg === 'request refused')
  t.equal(refused.length, 1)
  t.match(refused[0], { level: 30, code: 'invalid_request' })
  t.type(refused[0]?.reqId, 'string')
  t.notOk(lines(logs).some((l) => l.level >= 40), 'nothing above info for a 4xx')

  const boom = await get(app, '/test-only/boom')
  t.equal(boom.status, 500)
  t.equal(boom.body.code, 'internal_error')
  t.notMatch(JSON.stringify(boom.body), /kaboom/, 'the problem does not leak the error')
  const failed = lines(logs).filter((l) => l.msg === 'request failed')
  t.equal(failed.length, 1)
  t.equal(failed[0]?.level, 50)
  t.type(failed[0]?.reqId, 'string')
})

t.test('arguments, bodies, receipts, conflict keys, fingerprints and authorization are redacted wherever they are logged', async (t) => {
  const out: string[] = []
  const logger = createLogger('info', new Writable({ write (chunk, _e, cb) { out.push(String(chunk)); cb() } }))
  logger.info({
    arguments: { secret: 'S1' },
    body: 'S2',
    bodyText: 'S3',
    content: 'S4',
    intent: { arguments: 'S5' },
    receipt: { intent: 'S6' },
    conflictKey: 'tile:S7',
    fingerprint: 'S8',
    authorization: 'Bearer S9',
    headers: { authorization: 'Bearer S10', cookie: 'S11' },
    req: { headers: { authorization: 'Bearer S12' } },
    call: { arguments: 'S13', body: 'S14', content: 'S15', conflictKey: 'S16' },
    batch: { call: { arguments: 'S17' } },
    kept: 'visible'
  }, 'redaction')
  const line = JSON.parse(out[0]!) as { kept: string, arguments: string, call: { arguments: string }, batch: { call: { arguments: string } }, headers: { authorization: string } }
  t.notMatch(out[0], /S\d/, 'no value survives')
  t.equal(line.kept, 'visible')
  t.equal(line.arguments, REDACTED)
  t.equal(line.call.arguments, REDACTED)
  t.equal(line.batch.call.arguments, REDACTED)
  t.equal(line.headers.authorization, REDACTED)
})

t.test("a request's API key never reaches a log line", async (t) => {
  const ex = await startExecutor(t)
  const key = 'orch-key-LOGCANARY-0123456789'
  const { app, logs } = await buildTestApp(t, {
    tools: [tool('look', ex.url, { readOnly: true })],
    keysDoc: { keys: [{ key, tenant: 'acme', roles: ['orchestrator'] }] }
  })
  const auth = { authorization: `Bearer ${key}` }
  t.equal((await post(app, '/v1/runs', { runId: 'r1' }, auth)).status, 201)
  t.equal((await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'look', arguments: {} }] }, auth)).status, 200)
  t.equal((await get(app, '/v1/runs/r1', { authorization: 'Bearer wrong-LOGCANARY' })).status, 401)
  t.ok(logs.length > 3)
  t.notMatch(logs.join('\n'), /LOGCANARY/)
})

t.test('a telemetry hook that throws is logged once at error and the batch goes on', async (t) => {
  const ex = await startExecutor(t)
  const { app, logs } = await buildTestApp(t, {
    tools: [tool('look', ex.url, { readOnly: true })],
    telemetry: { observeBatch: () => ({ callStarted: () => { throw new Error('hook bug') } }) }
  })
  await post(app, '/v1/runs', { runId: 'r1' })
  const res = await post(app, '/v1/runs/r1/batches', { calls: [{ id: 'a', name: 'look', arguments: {} }, { id: 'b', name: 'look', arguments: { x: 1 } }] })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'ok'])
  const failures = lines(logs).filter((l) => l.msg === 'a telemetry hook failed')
  t.equal(failures.length, 1)
  t.match(failures[0], { level: 50, hook: 'callStarted' })
})

t.test('censoring reaches into arrays and errors, copies only what it censors, and stops at a depth', async (t) => {
  const clean = { runId: 'r1', calls: [{ callId: 'a', tool: 'look' }] }
  t.equal(redactSensitive(clean), clean, 'nothing to censor: the very same object')

  // Canaries no stack trace can hold by chance (a temp dir like /tmp/tmp.89CST9S8Cf once matched /S\d/).
  const err = Object.assign(new Error('executor said no'), { body: 'canary-body-secret' })
  const out = redactSensitive({ err, list: [{ content: 'canary-content-secret' }, 'kept'], deep: { a: { b: { c: { d: { e: { f: 'canary-deep-secret' } } } } } } })
  t.notMatch(JSON.stringify(out), /canary-/)
  t.match(out.err, { type: 'Error', message: 'executor said no', body: REDACTED })
  t.type(out.err.stack, 'string')
  t.same(out.list, [{ content: REDACTED }, 'kept'])
  t.equal(out.deep.a.b.c.d.e, REDACTED, 'past the depth limit, a subtree is censored whole')
  t.equal(err.body, 'canary-body-secret', 'the logged object itself is left alone')
})
