import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import t from 'tap'
import { buildTestApp, freePort, get, runBatch } from '../helper.js'

const require = createRequire(import.meta.url)
/** The everything server's own bin, run with this node: nothing is fetched. Its Streamable HTTP transport listens on PORT at /mcp. */
const EVERYTHING_BIN = join(dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist/index.js')

const port = await freePort()
const child = spawn(process.execPath, [EVERYTHING_BIN, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] })
t.teardown(() => { child.kill() })
// It says on stderr when it listens.
await new Promise<void>((resolve, reject) => {
  let seen = ''
  child.stderr.on('data', (chunk: Buffer) => {
    seen += chunk.toString()
    if (seen.includes('listening on port')) resolve()
  })
  child.once('exit', (code) => { reject(new Error(`the everything server exited (${code})`)) })
})

const { app } = await buildTestApp(t)
const url = `http://127.0.0.1:${port}/mcp`
await app.services.mcp.startAll([
  { name: 'every', transport: 'streamableHttp', url, trust: 'trusted', include: ['echo', 'get-sum', 'get-structured-content', 'get-tiny-image', 'trigger-long-running-operation'] },
  // The long operation reports progress every second, which resets a call's timeout up to maxTimeoutMs
  // (SPEC §18): capped at the timeout itself here, so the write below still runs past it.
  { name: 'loose', transport: 'streamableHttp', url, include: ['echo', 'trigger-long-running-operation'], timeoutMs: 1500, maxTimeoutMs: 1500 }
])

t.test('the everything server over Streamable HTTP: its tools are imported, reads believed from a trusted server', async (t) => {
  const view = (await get(app, '/v1/mcp-servers/every')).body
  t.equal(view.state, 'ready')
  t.same(view.tools, ['every_echo', 'every_get-structured-content', 'every_get-sum', 'every_get-tiny-image', 'every_trigger-long-running-operation'])
  t.equal((await get(app, '/v1/tools/every_get-sum')).body.readOnly, true)
  t.equal((await get(app, '/v1/tools/loose_echo')).body.readOnly, false)
})

t.test('reads overlap and each result is mapped: text, structured content, mixed content', async (t) => {
  const res = await runBatch(app, [
    { id: 'e', name: 'every_echo', arguments: { message: 'hi there' } },
    { id: 's', name: 'every_get-sum', arguments: { a: 2, b: 3 } },
    { id: 'w', name: 'every_get-structured-content', arguments: { location: 'New York' } },
    { id: 'i', name: 'every_get-tiny-image', arguments: {} }
  ])
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'ok', 'ok', 'ok'])
  t.same(res.body.results.map((r: { details: { epoch: number } }) => r.details.epoch), [0, 0, 0, 0])
  t.match(res.body.results[0].content, /hi there/)
  t.match(res.body.results[1].content, /5/)
  t.match(JSON.parse(res.body.results[2].content), { temperature: Number, conditions: String })
  t.ok(Array.isArray(JSON.parse(res.body.results[3].content)), 'an image among the items: the content array')
})

t.test('the argument validation of the server is a definitive error', async (t) => {
  // get-sum's schema is the server's own: toolgate rejects what it can check before sending.
  const res = await runBatch(app, [{ id: 's', name: 'every_get-sum', arguments: { a: 'two', b: 3 } }])
  t.equal(res.body.results[0].status, 'rejected')
  t.equal(res.body.results[0].details.reason, 'invalid_arguments')
})

t.test('a long operation completes within the timeout, and past it a write is uncertain', async (t) => {
  const read = await runBatch(app, [{ id: 'r', name: 'every_trigger-long-running-operation', arguments: { duration: 5, steps: 5 } }])
  t.equal(read.body.results[0].status, 'ok', 'within the trusted entry\'s 30 s timeout it completes')
  const write = await runBatch(app, [{ id: 'w', name: 'loose_trigger-long-running-operation', arguments: { duration: 5, steps: 5 } }])
  t.equal(write.body.results[0].status, 'uncertain')
  t.equal(write.body.results[0].details.cause, 'timeout')
})
