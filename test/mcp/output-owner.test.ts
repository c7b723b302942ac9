/**
 * An MCP answer's check against its tool's outputSchema, when it goes to the
 * validation thread (a large structuredContent), takes its turn there as the
 * calling tenant's (src/mcp/servers.ts), so one tenant's backlog of large
 * answers from a server never holds another tenant's calls to it.
 */
import t from 'tap'
import { ValidationThread } from '../../src/tools/validation-thread.js'
import { buildTestApp, runBatch } from '../helper.js'
import { listedTool, startScriptedServer } from './scripted-server.js'

t.test('a large answer is checked on the validation thread in the calling tenant\'s turn', async (t) => {
  const owners: Array<string | undefined> = []
  const validate = ValidationThread.prototype.validate
  ValidationThread.prototype.validate = function (this: ValidationThread, ...args: Parameters<typeof validate>) {
    owners.push(args[5])
    return validate.apply(this, args)
  }
  t.teardown(() => { ValidationThread.prototype.validate = validate })
  const outputSchema = { type: 'object', properties: { rows: { type: 'array', items: { type: 'string' } } }, required: ['rows'] }
  const server = await startScriptedServer([listedTool('typed', { outputSchema, annotations: { readOnlyHint: true } })])
  t.teardown(() => server.close())
  // Over 32 KiB: checked on the thread, not in the event loop.
  server.answer = () => ({ result: { content: [{ type: 'text', text: 'rows' }], structuredContent: { rows: Array.from({ length: 2_000 }, (_, i) => `row ${i} ${'x'.repeat(20)}`) } } })
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 'r', transport: 'streamableHttp', url: server.url, trust: 'trusted' }])
  const res = await runBatch(app, [{ id: 'c', name: 'r_typed', arguments: {} }])
  t.equal(res.body.results[0].status, 'ok')
  t.ok(owners.length >= 1, 'checked on the validation thread')
  const tenant = (await app.inject({ method: 'GET', url: `/v1/runs/${String(res.body.runId)}` })).json().tenant ?? 'default'
  t.same(owners, owners.map(() => tenant), `in the tenant's turn (${String(tenant)}), not the server's`)
})
