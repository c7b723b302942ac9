import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { createAuthorizer } from '../../src/auth/authorizer.js'
import { buildTestApp, post, sleep, startExecutor, tool } from '../helper.js'

type Tap = { teardown: (fn: () => unknown) => void }

const SECRET = 'hunter2-do-not-log-me'

/** An answer of the policy engine, chosen by the call's `k` argument. */
const ANSWERS: Record<string, (res: ServerResponse) => void | Promise<void>> = {
  true: (res) => json(res, 200, { result: true }),
  false: (res) => json(res, 200, { result: false }),
  allow: (res) => json(res, 200, { result: { allow: true, reason: 'fine' } }),
  deny: (res) => json(res, 200, { result: { allow: false, reason: 'no building on water' } }),
  denyBare: (res) => json(res, 200, { result: { allow: false } }),
  http500: (res) => json(res, 500, { code: 'internal_error' }),
  http404: (res) => json(res, 404, { code: 'undefined_document' }),
  garbage: (res) => { res.writeHead(200, { 'content-type': 'application/json' }).end('{"result": tru') },
  html: (res) => { res.writeHead(200, { 'content-type': 'text/html' }).end('<html>ok</html>') },
  noResult: (res) => json(res, 200, {}),
  nullBody: (res) => json(res, 200, null),
  stringResult: (res) => json(res, 200, { result: 'true' }),
  allowString: (res) => json(res, 200, { result: { allow: 'true' } }),
  huge: (res) => json(res, 200, { result: true, padding: 'x'.repeat(200_000) }),
  slow: async (res) => { await sleep(4000); json(res, 200, { result: true }) },
  reset: (res) => { res.socket?.destroy() }
}

function json (res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

interface OpaInput { runId: string, tenant: string, tool: string, callId: string, arguments: Record<string, unknown> }
interface Opa { url: string, inputs: OpaInput[] }

/** A local server shaped like Open Policy Agent's data API. */
async function startOpa (t: Tap): Promise<Opa> {
  const inputs: OpaInput[] = []
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => { text += c })
    req.on('end', () => {
      const { input } = JSON.parse(text) as { input: OpaInput }
      inputs.push(input)
      const answer = ANSWERS[String(input.arguments?.k)] ?? ANSWERS.true!
      void answer(res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/data/toolgate/allow`, inputs }
}

t.test('the OPA-shaped authorizer allows on true or allow: true, and rejects everything else, failing closed', async (t) => {
  const opa = await startOpa(t)
  const ex = await startExecutor(t)
  const { app, logs } = await buildTestApp(t, {
    config: { authorizerUrl: opa.url, authorizerTimeoutMs: 1000 },
    tools: [tool('look', ex.url, { readOnly: true }), tool('build', ex.url, { rewrite: [{ op: 'default', path: '/y', value: 7 }] })]
  })
  const cases: Array<[string, string, string?]> = [
    ['true', 'ok'],
    ['allow', 'ok'],
    ['false', 'rejected', 'policy_denied'],
    ['deny', 'rejected', 'policy_denied'],
    ['denyBare', 'rejected', 'policy_denied'],
    ['http500', 'rejected', 'unauthorized'],
    ['http404', 'rejected', 'unauthorized'],
    ['garbage', 'rejected', 'unauthorized'],
    ['html', 'rejected', 'unauthorized'],
    ['noResult', 'rejected', 'unauthorized'],
    ['nullBody', 'rejected', 'unauthorized'],
    ['stringResult', 'rejected', 'unauthorized'],
    ['allowString', 'rejected', 'unauthorized'],
    ['huge', 'rejected', 'unauthorized'],
    ['slow', 'rejected', 'unauthorized'],
    ['reset', 'rejected', 'unauthorized']
  ]
  const run = await post(app, '/v1/runs', { runId: 'r1', limits: { exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 0, cycleAdvisoryRepetitions: 0, cycleTerminationRepetitions: 0, consecutiveErrorAdvisory: 0, consecutiveErrorTermination: 0, noProgressAdvisory: 0, noProgressTermination: 0 } })
  t.equal(run.status, 201)
  const res = await post(app, '/v1/runs/r1/batches', {
    calls: cases.map(([k], i) => ({ id: `c${i}`, name: i % 2 === 0 ? 'look' : 'build', arguments: { k, secret: SECRET, x: i } }))
  })
  t.equal(res.status, 200)
  for (const [i, [k, status, reason]] of cases.entries()) {
    const result = res.body.results[i]
    t.equal(result.status, status, `${k}: ${status}`)
    if (reason !== undefined) {
      t.equal(result.details.reason, reason, `${k}: ${reason}`)
      t.equal(result.isError, true)
    }
  }
  t.match(JSON.parse(res.body.results[3].content), { error: 'policy_denied' }, 'the model sees a short error')
  t.match(res.body.results[3].content, /no building on water/, "the policy's reason is passed on")
  t.same(ex.calls.map((c) => c.callId).sort(), ['c0', 'c1'], 'only the allowed calls reached the executor')

  // The authorizer saw every call with its prepared arguments (after host rewrites).
  t.equal(opa.inputs.length, cases.length)
  const build = opa.inputs.find((i) => i.callId === 'c1')!
  t.same(build, { runId: 'r1', tenant: 'default', tool: 'build', callId: 'c1', arguments: { k: 'allow', secret: SECRET, x: 1, y: 7 } })

  const text = logs.join('')
  t.ok(text.length > 0, 'the app logged')
  t.notOk(text.includes(SECRET), 'arguments sent to the authorizer never reach the logs')
})

t.test('calls refused before the authorizer are not sent to it; required scopes are checked against the key', async (t) => {
  const opa = await startOpa(t)
  const ex = await startExecutor(t)
  const keysDoc = {
    keys: [
      { key: 'writer-key-0123456789abcd', tenant: 'acme', roles: ['orchestrator'], scopes: ['world:write', 'world:read'] },
      { key: 'reader-key-0123456789abcd', tenant: 'acme', roles: ['orchestrator'], scopes: ['world:read'] },
      { key: 'nobody-key-0123456789abcd', tenant: 'acme', roles: ['orchestrator'] }
    ]
  }
  const { app } = await buildTestApp(t, {
    keysDoc,
    config: { authorizerUrl: opa.url },
    tools: [
      tool('build', ex.url, { requiredScopes: ['world:write', 'world:read'] }),
      tool('look', ex.url, { readOnly: true, requiredScopes: ['world:read'] }),
      tool('free', ex.url, { readOnly: true })
    ]
  })
  const batch = [
    { id: 'b', name: 'build', arguments: {} },
    { id: 'l', name: 'look', arguments: {} },
    { id: 'f', name: 'free', arguments: {} },
    { id: 'u', name: 'unknown', arguments: {} },
    { id: 'i', name: 'free', arguments: { x: 'not an integer' } }
  ]
  const expect: Record<string, string[]> = {
    writer: ['ok', 'ok', 'ok', 'rejected', 'rejected'],
    reader: ['rejected', 'ok', 'ok', 'rejected', 'rejected'],
    nobody: ['rejected', 'rejected', 'ok', 'rejected', 'rejected']
  }
  for (const who of ['writer', 'reader', 'nobody']) {
    const headers = { authorization: `Bearer ${who}-key-0123456789abcd` }
    t.equal((await post(app, '/v1/runs', { runId: who }, headers)).status, 201)
    const seenBefore = opa.inputs.length
    const res = await post(app, `/v1/runs/${who}/batches`, { calls: batch }, headers)
    t.same(res.body.results.map((r: { status: string }) => r.status), expect[who], who)
    const reasons = res.body.results.map((r: { details: { reason?: string } }) => r.details.reason ?? null)
    for (const [i, status] of expect[who]!.entries()) {
      if (status === 'rejected' && i < 2) t.equal(reasons[i], 'unauthorized', `${who}: ${batch[i]!.name} lacks a scope`)
    }
    t.equal(reasons[3], 'unknown_tool')
    t.equal(reasons[4], 'invalid_arguments')
    const asked = opa.inputs.slice(seenBefore).map((i) => i.callId).sort()
    t.same(asked, res.body.results.filter((r: { status: string }) => r.status === 'ok').map((r: { callId: string }) => r.callId).sort(),
      `${who}: only calls that passed every local stage were sent to the authorizer`)
  }
  const offered = await app.inject({ method: 'GET', url: '/v1/runs/reader/tools', headers: { authorization: 'Bearer reader-key-0123456789abcd' } })
  t.same(offered.json().tools.map((x: { name: string }) => x.name), ['free', 'look'], 'the model is offered only tools the key may use')
})

t.test('an authorizer that cannot be reached, or answers too late, rejects the call', async (t) => {
  const opa = await startOpa(t)
  const gone = createAuthorizer({ url: 'http://127.0.0.1:1/v1/data/x', timeoutMs: 500 })
  const input = { runId: 'r', tenant: 't', tool: 'x', callId: 'c', arguments: { k: 'slow' } }
  t.match(await gone(input), { ok: false, reason: 'unauthorized' })
  const late = createAuthorizer({ url: opa.url, timeoutMs: 100 })
  t.match(await late(input), { ok: false, reason: 'unauthorized' })
  const small = createAuthorizer({ url: opa.url, timeoutMs: 2000, maxAnswerBytes: 10 })
  t.match(await small({ ...input, arguments: { k: 'true' } }), { ok: false, reason: 'unauthorized' }, 'an answer over the cap is no decision')
  const fine = createAuthorizer({ url: opa.url, timeoutMs: 2000 })
  t.same(await fine({ ...input, arguments: { k: 'true' } }), { ok: true, value: undefined })
  const long = await fine({ ...input, arguments: { k: 'deny' } })
  t.same(long, { ok: false, reason: 'policy_denied', message: 'no building on water' })
})
