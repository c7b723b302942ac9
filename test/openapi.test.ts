import { readFile } from 'node:fs/promises'
import t from 'tap'
import { parse } from 'yaml'
import AjvModule from 'ajv'
import { createConfig, lintFromString } from '@redocly/openapi-core'
import { renderOpenApi } from '../src/http/openapi.js'
import { ERRORS, type ErrorCode } from '../src/errors.js'
import { buildTestApp } from './helper.js'

const Ajv = AjvModule.default

const checkedIn = (): Promise<string> => readFile(new URL('../openapi.yaml', import.meta.url), 'utf8')

interface Media { schema?: { $ref?: string }, example?: unknown }
interface Response { description?: string, content?: Record<string, Media> }
interface Operation { operationId?: string, summary?: string, description?: string, security?: unknown[], requestBody?: unknown, parameters?: unknown[], responses: Record<string, Response> }
interface Document { paths: Record<string, Record<string, Operation>>, components: { schemas: Record<string, Record<string, unknown>> } }

const OPEN = new Set(['/healthz', '/readyz', '/metrics', '/openapi.json'])
/** Whether an operation needs no key: the probes, metrics and the document, and CORS preflights (a browser sends no key with one). */
const isOpen = (path: string, method: string): boolean => OPEN.has(path) || method === 'options'

function operations (doc: Document): Array<[string, string, Operation]> {
  return Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]): [string, string, Operation] => [path, method, op]))
}

/** The catalogue codes a problem response's description names. */
function codesNamed (response: Response): string[] {
  return [...(response.description ?? '').matchAll(/`([a-z_]+)`:/g)].map((m) => m[1]!)
}

const doc = parse(await checkedIn()) as Document

t.test('openapi.yaml is exactly what the route schemas generate (run `npm run openapi` after changing a route)', async (t) => {
  const { app } = await buildTestApp(t)
  t.equal(await checkedIn(), await renderOpenApi(app))
})

t.test('openapi.yaml passes the Redocly linter with its recommended rules, license rules included, without a single warning', async (t) => {
  const config = await createConfig({ extends: ['recommended'] })
  const problems = await lintFromString({ source: await checkedIn(), absoluteRef: 'openapi.yaml', config })
  t.same(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? ''}`), [])
})

t.test('every operation has an operationId, a summary, a description, and a real description for each response', async (t) => {
  const ids = new Set<string>()
  for (const [path, method, op] of operations(doc)) {
    const where = `${method.toUpperCase()} ${path}`
    t.match(op.operationId, /^[a-z][A-Za-z]+$/, `${where} has an operationId`)
    t.notOk(ids.has(op.operationId!), `${where}: ${op.operationId} is unique`)
    ids.add(op.operationId!)
    t.ok(op.summary, `${where} has a summary`)
    t.ok(op.description, `${where} has a description`)
    for (const [status, response] of Object.entries(op.responses)) {
      t.ok(response.description !== undefined && response.description !== 'Default Response', `${where} ${status} is described`)
    }
  }
})

t.test('every error an operation answers is an application/problem+json Problem naming catalogue codes of its status', async (t) => {
  for (const [path, method, op] of operations(doc)) {
    for (const [status, response] of Object.entries(op.responses)) {
      if (!/^[45]\d\d$/.test(status)) continue
      const where = `${method.toUpperCase()} ${path} ${status}`
      if (path === '/readyz' && status === '503') continue // the probe's own answer, not an error
      t.same(Object.keys(response.content ?? {}), ['application/problem+json'], `${where} is a problem`)
      t.equal(response.content?.['application/problem+json']?.schema?.$ref, '#/components/schemas/Problem', `${where} uses the Problem schema`)
      const codes = codesNamed(response)
      t.ok(codes.length > 0, `${where} names its codes`)
      for (const code of codes) t.equal(ERRORS[code as ErrorCode]?.status, Number(status), `${where}: ${code} is a catalogue code of that status`)
    }
  }
})

t.test('every operation declares the errors any request to it can meet', async (t) => {
  for (const [path, method, op] of operations(doc)) {
    const where = `${method.toUpperCase()} ${path}`
    const declared = (status: string, code: string): boolean => codesNamed(op.responses[status] ?? {}).includes(code)
    t.ok(declared('500', 'internal_error'), `${where} declares 500`)
    t.ok(declared('503', 'overloaded') || path === '/readyz', `${where} declares 503`)
    t.ok(op.responses['4XX'] !== undefined, `${where} declares what the HTTP layer refuses`)
    if (!isOpen(path, method)) {
      for (const [status, code] of [['401', 'unauthorized'], ['403', 'forbidden'], ['429', 'rate_limited']]) t.ok(declared(status!, code!), `${where} declares ${status}`)
    }
    if (['post', 'put', 'patch', 'delete'].includes(method)) {
      for (const [status, code] of [['400', 'invalid_request'], ['413', 'payload_too_large'], ['415', 'unsupported_media_type']]) t.ok(declared(status!, code!), `${where} declares ${status}`)
    }
    if ((op.parameters ?? []).length > 0) t.ok(declared('400', 'invalid_request'), `${where} declares 400 for its parameters`)
  }
})

t.test('the Problem schema gives the catalogue as the enum of `code` and types its extras', async (t) => {
  const problem = doc.components.schemas.Problem as { properties: Record<string, { enum?: string[], type?: string, items?: { type: string } }> }
  t.same(problem.properties.code?.enum, Object.keys(ERRORS))
  t.ok((problem.properties.terminationReason?.enum ?? []).includes('exact_repeat'))
  t.same(problem.properties.problems?.items, { type: 'string' })
  const event = doc.components.schemas.BatchResponse as { properties: { events: { items: { properties: { type: { enum?: string[] } } } }, run: { properties: { state: { enum?: string[] } } } } }
  t.ok((event.properties.events.items.properties.type.enum ?? []).includes('batch.completed'), 'event types are an enum')
  t.same(event.properties.run.properties.state.enum, ['active', 'terminated', 'cancelled', 'ended'], 'run.state is an enum')
})

t.test('probes, metrics, the document and CORS preflights need no key; every other operation needs a bearer key', async (t) => {
  for (const [path, method, op] of operations(doc)) {
    if (isOpen(path, method)) t.same(op.security, [], `${method.toUpperCase()} ${path} is open`)
    else t.equal(op.security, undefined, `${method.toUpperCase()} ${path} inherits the bearer key`)
  }
  t.same((doc as unknown as { security: unknown }).security, [{ bearer: [] }])
})

t.test('the batch route declares its server-sent event stream beside JSON, with the README batch as example', async (t) => {
  const op = doc.paths['/v1/runs/{runId}/batches']!.post!
  t.same(Object.keys(op.responses['200']!.content!).sort(), ['application/json', 'text/event-stream'])
  const body = (op.requestBody as { content: Record<string, Media> }).content['application/json']
  t.match(body?.example, { batchId: 'turn-1', calls: [{ id: 'call_1' }, { id: 'call_2' }, { id: 'call_3', name: 'construct' }, { id: 'call_4', name: 'fly' }] })
})

t.test('GET /openapi.json serves, without a key, the document the routes generate', async (t) => {
  const { app } = await buildTestApp(t, { keysDoc: { keys: [{ key: 'a-long-orchestrator-key', tenant: 'acme', roles: ['orchestrator'] }] } })
  const res = await app.inject({ method: 'GET', url: '/openapi.json' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  t.same(res.json(), parse(await renderOpenApi(app)))
})

t.test('with TOOLGATE_METRICS_AUTH the served document asks a key for /metrics and declares its refusals', async (t) => {
  const { app } = await buildTestApp(t, { config: { metricsAuth: true } })
  const served = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as Document
  const metrics = served.paths['/metrics']!.get!
  t.equal(metrics.security, undefined)
  t.ok(codesNamed(metrics.responses['401'] ?? {}).includes('unauthorized'))
  t.ok(codesNamed(metrics.responses['403'] ?? {}).includes('forbidden'))
})

t.test('the problems routes answer have the content type and the shape the document declares', async (t) => {
  const { app } = await buildTestApp(t)
  const ajv = new Ajv({ strict: false })
  ajv.addSchema(doc.components.schemas.Problem!, '#/components/schemas/Problem')
  const validate = ajv.compile({ $ref: '#/components/schemas/Problem' })
  await app.inject({ method: 'POST', url: '/v1/runs', payload: { runId: 'gone' } })
  await app.inject({ method: 'POST', url: '/v1/runs/gone/cancel' })
  const answers = await Promise.all([
    app.inject({ method: 'GET', url: '/v1/runs/nope' }),
    app.inject({ method: 'POST', url: '/v1/runs/gone/batches', payload: { calls: [] } }),
    app.inject({ method: 'PUT', url: '/v1/tools/bad', payload: { inputSchema: { type: 'nope' }, executor: { url: 'http://127.0.0.1:1/x' } } }),
    app.inject({ method: 'POST', url: '/v1/runs', headers: { 'content-type': 'text/plain' }, payload: 'x' })
  ])
  t.same(answers.map((r) => r.statusCode), [404, 409, 400, 415])
  for (const res of answers) {
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.ok(validate(res.json()), `${res.statusCode} ${res.body} is a Problem`)
  }
  t.equal(answers[1]!.json().terminationReason, 'cancelled')
  t.type(answers[2]!.json().problems, Array)
})
