import t from 'tap'
import { buildTestApp, post } from '../helper.js'

t.test('a path known under other methods answers 405 with Allow; an unknown path 404', async (t) => {
  const { app } = await buildTestApp(t)
  const wrong = await app.inject({ method: 'DELETE', url: '/v1/runs' })
  t.equal(wrong.statusCode, 405)
  t.equal(wrong.headers.allow, 'GET, HEAD, POST')
  t.match(wrong.headers['content-type'], /^application\/problem\+json/)
  t.match(wrong.json(), { code: 'method_not_allowed', status: 405 })
  const param = await app.inject({ method: 'PATCH', url: '/v1/runs/some-run?x=1' })
  t.equal(param.statusCode, 405)
  t.equal(param.headers.allow, 'DELETE, GET, HEAD', 'a path with a parameter matches its route')
  const none = await app.inject({ method: 'GET', url: '/v1/nothing-here' })
  t.equal(none.statusCode, 404)
  t.equal(none.json().code, 'not_found')
  t.equal(none.headers.allow, undefined)
})

t.test('a draining service refuses new runs and batches with 503 and Retry-After, and still answers reads', async (t) => {
  const { app } = await buildTestApp(t)
  t.equal((await post(app, '/v1/runs', { runId: 'before' })).status, 201)
  app.services.draining = true
  const run = await post(app, '/v1/runs', { runId: 'during' })
  t.equal(run.status, 503)
  t.equal(run.body.code, 'overloaded')
  t.equal(run.headers['retry-after'], '1')
  const batch = await post(app, '/v1/runs/before/batches', { calls: [] })
  t.equal(batch.status, 503)
  t.equal(batch.headers['retry-after'], '1')
  t.equal((await app.inject({ method: 'GET', url: '/v1/runs/before' })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/v1/runs/during' })).statusCode, 404, 'the refused run was not made')
})
