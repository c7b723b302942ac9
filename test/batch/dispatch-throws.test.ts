/**
 * A tool's executor that throws as the call is handed to it, before any
 * answer: the call settles as a failure of its own (a read `error`, a write
 * `uncertain`: it may have left), the batch completes with every other call,
 * on the runner's path and on the path of a call guard (a tenant-scoped key)
 * alike.
 */
import t from 'tap'
import { buildTestApp, post } from '../helper.js'

interface Compiling { compile: (input: unknown, via: unknown) => unknown, replaceOwned: (owner: string, tools: unknown[]) => unknown }

const answered = { kind: 'answered', status: 200, body: { content: 'ok' }, bodyText: '{"content":"ok"}' }
const throwing = { send: () => { throw new Error('the executor fell over') } }
const fine = { send: async () => answered }

function definition (name: string, extra: Record<string, unknown>): Record<string, unknown> {
  return { name, description: name, inputSchema: { type: 'object' }, executor: { url: 'http://127.0.0.1:9/tools/x', timeoutMs: 5000 }, ...extra }
}

t.test('an executor that throws as a call is sent: the call fails on its own and the batch completes', async (t) => {
  const { app } = await buildTestApp(t)
  const tools = app.services.tools as unknown as Compiling
  tools.replaceOwned('test', [
    tools.compile(definition('look', { readOnly: true }), throwing),
    tools.compile(definition('edit', { conflictKey: 'file:{/k}', conflictScope: 'tenant' }), throwing),
    tools.compile(definition('fine', { readOnly: true }), fine)
  ])
  const run = await post(app, '/v1/runs', {})
  const res = await post(app, `/v1/runs/${run.body.runId as string}/batches`, {
    calls: [
      { id: 'r', name: 'look', arguments: {} },
      { id: 'w', name: 'edit', arguments: { k: 'readme' } },
      { id: 'f', name: 'fine', arguments: {} }
    ]
  })
  t.equal(res.status, 200)
  const byId = Object.fromEntries((res.body.results as Array<{ callId: string, status: string, details: { cause?: string } }>).map((r) => [r.callId, r]))
  t.match(byId.r, { status: 'error', details: { cause: 'internal_error' } }, 'a read: error, no effect')
  t.match(byId.w, { status: 'uncertain', details: { cause: 'internal_error' } }, 'a write under a tenant-scoped key (a call guard): uncertain')
  t.match(byId.f, { status: 'ok' }, 'the other call ran')
})
