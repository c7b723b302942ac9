/**
 * A unique secret placed in arguments (plain, rejected raw, action, conflict
 * key) and in executors' answers must never reach a log line, the metrics,
 * a span or span event, or an event the host receives. It may reach the
 * model's `content`, and the host's `details.receipt` / `details.executor` /
 * `details.conflictKey` (a conflict key is the name of a resource, rendered
 * from the arguments, and shown to orchestrator and operator keys as the
 * uncertain-write lists show it: docs/tools.md says so).
 */
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { SpanKind } from '@opentelemetry/api'
import { NOT_RUN_EVENT } from '../../src/telemetry/tracing.js'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'
import { recordSpans } from './spans.js'

// Request (SERVER), batch, call and executor request (CLIENT) spans, as a traced deployment makes them.
const { exporter } = recordSpans(t)

const SECRET = `canary${randomUUID().replaceAll('-', '')}`

/** A batch response without what may carry the secret by design. */
interface Answer { results?: Array<{ content?: unknown, details?: Record<string, unknown> }> }

function withoutAllowed (response: unknown): unknown {
  const copy = structuredClone(response) as Answer
  for (const r of copy.results ?? []) {
    delete r.content
    delete r.details?.receipt
    delete r.details?.executor
    delete r.details?.conflictKey
  }
  return copy
}

function parseSse (text: string): Array<{ event: string, data: { results: Array<{ status: string }>, policyMessages: unknown[] } }> {
  return text.split('\n\n').filter((b) => b.trim() !== '').map((block) => {
    const event = /^event: (.*)$/m.exec(block)?.[1] ?? ''
    const data = /^data: (.*)$/m.exec(block)?.[1] ?? 'null'
    return { event, data: JSON.parse(data) }
  })
}

t.test('a secret in arguments and executor answers never reaches logs, metrics, spans or host events', async (t) => {
  const ex = await startExecutor(t)
  ex.on('look', () => ({ content: `seen ${SECRET}`, details: { echo: SECRET } }))
  ex.on('poke', (_c, _r, reply) => reply.code(400).send({ content: `refused ${SECRET}`, details: { why: SECRET } }))
  ex.on('flaky', (_c, _r, reply) => reply.code(500).send({ error: SECRET }))
  ex.on('build', () => ({ status: 'committed', result: { label: SECRET }, stateRevision: SECRET }))
  const schema = { type: 'object', properties: { k: { type: 'string' }, x: { type: 'integer' } } }
  const { app, logs } = await buildTestApp(t, {
    tools: [
      tool('look', ex.url, { readOnly: true, inputSchema: schema, conflictKey: 'read:{/k}' }),
      tool('poke', ex.url, { inputSchema: schema, conflictKey: 'tile:{/k}' }),
      tool('flaky', ex.url, { inputSchema: schema, conflictKey: 'tile:{/k}' }),
      tool('build', ex.url, { inputSchema: schema, action: {} }),
      tool('build_projected', ex.url, { inputSchema: schema, executor: { url: `${ex.url}/tools/build`, timeoutMs: 5000 }, action: { projection: '$error(receipt.result.label)' } })
    ]
  })
  const host: unknown[] = []
  const lifecycle = { events: 'lifecycle' }

  // 1. Plain, rejected (raw string that does not parse; schema failure), executor error, action.
  await post(app, '/v1/runs', { runId: 'c1', ...lifecycle })
  let res = await post(app, '/v1/runs/c1/batches', {
    calls: [
      { id: 'a', name: 'look', arguments: { k: SECRET } },
      { id: 'b', name: 'look', arguments: `{"k": "${SECRET}"` },
      { id: 'c', name: 'look', arguments: { x: SECRET } },
      { id: 'd', name: 'poke', arguments: { k: SECRET } },
      { id: 'e', name: 'build', arguments: { k: SECRET } }
    ]
  })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'rejected', 'rejected', 'error', 'ok'])
  t.match(res.body.results[0].content, SECRET, 'the executor content reaches the model, as it should')
  host.push(withoutAllowed(res.body))

  // 2. An uncertain write whose conflict key holds the secret blocks the next write with that key.
  res = await post(app, '/v1/runs/c1/batches', { calls: [{ id: 'f', name: 'flaky', arguments: { k: SECRET } }, { id: 'g', name: 'poke', arguments: { k: SECRET } }] })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['uncertain', 'blocked'])
  host.push(withoutAllowed(res.body))

  // 3. Streamed: identical secret calls give an advisory, then terminate the run.
  await post(app, '/v1/runs', { runId: 'c2', ...lifecycle, limits: { exactToolRepeatAdvisoryThreshold: 2, exactToolRepeatTerminationThreshold: 3 } })
  const sse = await app.inject({
    method: 'POST',
    url: '/v1/runs/c2/batches',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    payload: { calls: [1, 2, 3].map((i) => ({ id: `s${i}`, name: 'look', arguments: { k: SECRET } })) }
  })
  const stream = parseSse(sse.body)
  t.ok(stream.some((e) => e.event === 'tool.repeat_detected'), 'lifecycle events are streamed')
  const completed = stream.find((e) => e.event === 'batch.completed')
  t.same(completed?.data.results.map((r) => r.status), ['ok', 'ok', 'terminated'])
  t.equal(completed?.data.policyMessages.length, 1)
  for (const e of stream) host.push(e.event === 'batch.completed' ? withoutAllowed(e.data) : e)

  // 4. A projection that throws with the secret as its message.
  await post(app, '/v1/runs', { runId: 'c3', ...lifecycle })
  res = await post(app, '/v1/runs/c3/batches', { calls: [{ id: 'p', name: 'build_projected', arguments: { k: SECRET } }] })
  t.equal(res.body.results[0].status, 'projection_failed')
  host.push(withoutAllowed(res.body))

  // The secret did travel where it must: to the executors.
  t.ok(ex.calls.filter((c) => JSON.stringify(c.arguments).includes(SECRET)).length >= 7, 'executors received the secret arguments')
  t.ok(host.length >= 8)

  for (const runId of ['c1', 'c2', 'c3']) {
    host.push((await get(app, `/v1/runs/${runId}`)).body)
    host.push((await get(app, `/v1/runs/${runId}/summary`)).body)
  }
  host.push((await get(app, '/v1/summary')).body)

  const metrics = String((await get(app, '/metrics')).body)
  const spans = exporter.getFinishedSpans()
  t.ok(spans.some((s) => s.events.some((e) => e.name === 'kernel.toolrepeatdetected')), 'the repeat event was traced')
  const notRun = spans.flatMap((s) => s.events.filter((e) => e.name === NOT_RUN_EVENT))
  t.equal(spans.filter((s) => s.name.startsWith('execute_tool')).length + notRun.length, 11, 'every call was traced: a span if it ran, an event if not')
  t.ok(spans.some((s) => s.kind === SpanKind.SERVER) && spans.some((s) => s.kind === SpanKind.CLIENT), 'request and executor spans are checked too')
  t.ok(logs.length > 10, 'logs were captured at trace level')

  t.notOk(logs.some((l) => l.includes(SECRET)), 'no log line holds the secret')
  t.notOk(metrics.includes(SECRET), 'the metrics do not hold the secret')
  const leakingSpans = spans.filter((s) => JSON.stringify({ name: s.name, attributes: s.attributes, events: s.events, status: s.status, links: s.links, resource: s.resource.attributes }).includes(SECRET))
  t.same(leakingSpans.map((s) => s.name), [], 'no span, attribute or span event holds the secret')
  const leakingHost = host.map((h) => JSON.stringify(h)).filter((h) => h.includes(SECRET))
  t.same(leakingHost, [], 'no host event, policy message, status detail, run or summary holds the secret')
})
