import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import t from 'tap'
import { buildTestApp, get, post, runBatch } from '../helper.js'

const require = createRequire(import.meta.url)
/** The filesystem server's own bin, run with this node: nothing is fetched. */
const FILESYSTEM_BIN = join(dirname(require.resolve('@modelcontextprotocol/server-filesystem/package.json')), 'dist/index.js')

// One toolgate for the whole file, in front of two filesystem servers over one directory: starting a
// node process per test would cost more than the tests. `files` is trusted, `loose` is not.
const dir = await mkdtemp(join(tmpdir(), 'toolgate-mcp-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
const { app, logs } = await buildTestApp(t)
const filesystem = (name: string, extra: Record<string, unknown>): Record<string, unknown> => ({
  name, transport: 'stdio', command: process.execPath, args: [FILESYSTEM_BIN, dir], include: ['read_text_file', 'write_file', 'list_directory'], ...extra
})
await app.services.mcp.startAll([
  filesystem('files', { trust: 'trusted', tools: { write_file: { conflictKey: 'file:{/path}' } } }),
  filesystem('loose', { prefix: 'loose_' })
])

t.test('the filesystem server over stdio: its tools are imported under the prefix, with annotations believed from a trusted server', async (t) => {
  const view = await get(app, '/v1/mcp-servers/files')
  t.equal(view.status, 200)
  t.equal(view.body.state, 'ready')
  t.equal(view.body.lastError, null)
  t.same(view.body.tools, ['files_list_directory', 'files_read_text_file', 'files_write_file'])
  t.type(view.body.refreshedAt, 'string')
  const read = await get(app, '/v1/tools/files_read_text_file')
  t.equal(read.body.readOnly, true)
  t.equal(read.body.executor.url, 'mcp://files/read_text_file')
  t.match(read.body.inputSchema, { type: 'object', properties: { path: { type: 'string' } } })
  const write = await get(app, '/v1/tools/files_write_file')
  t.equal(write.body.readOnly, false)
  t.equal(write.body.conflictKey, 'file:{/path}')
})

t.test('read tools of a trusted server overlap in one epoch', async (t) => {
  await writeFile(join(dir, 'a.txt'), 'alpha')
  await writeFile(join(dir, 'b.txt'), 'beta')
  const res = await runBatch(app, [
    { id: 'r1', name: 'files_read_text_file', arguments: { path: join(dir, 'a.txt') } },
    { id: 'r2', name: 'files_read_text_file', arguments: { path: join(dir, 'b.txt') } },
    { id: 'r3', name: 'files_list_directory', arguments: { path: dir } }
  ])
  t.equal(res.status, 200)
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'ok', 'ok'])
  t.same(res.body.results.map((r: { details: { epoch: number } }) => r.details.epoch), [0, 0, 0])
  t.equal(JSON.parse(res.body.results[0].content).content, 'alpha', 'structuredContent, serialized')
  t.equal(JSON.parse(res.body.results[1].content).content, 'beta')
  t.match(res.body.results[2].content, /a\.txt/)
})

t.test('write_file calls to the same path serialize by the conflict-key override, in source order; another path overlaps', async (t) => {
  const same = join(dir, 'same.txt')
  const res = await runBatch(app, [
    { id: 'w1', name: 'files_write_file', arguments: { path: same, content: 'first' } },
    { id: 'w2', name: 'files_write_file', arguments: { path: join(dir, 'other.txt'), content: 'other' } },
    { id: 'w3', name: 'files_write_file', arguments: { path: same, content: 'second' } }
  ], { toolExecution: 'parallel' })
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'ok', 'ok'])
  t.same(res.body.results.map((r: { details: { epoch: number } }) => r.details.epoch), [0, 0, 0], 'one epoch: parallel mode lets writes overlap')
  const [w1, , w3] = res.body.results as Array<{ details: { startedAt: string, durationMs: number } }>
  t.ok(Date.parse(w3!.details.startedAt) >= Date.parse(w1!.details.startedAt) + Math.floor(w1!.details.durationMs), 'w3 started after w1 settled')
  t.equal(await readFile(same, 'utf8'), 'second', 'the later write of the same path landed last')
})

t.test('a read after a write in the same batch sees what the write wrote', async (t) => {
  const path = join(dir, 'note.txt')
  const res = await runBatch(app, [
    { id: 'w', name: 'files_write_file', arguments: { path, content: 'written by toolgate' } },
    { id: 'r', name: 'files_read_text_file', arguments: { path } }
  ])
  t.same(res.body.results.map((r: { status: string }) => r.status), ['ok', 'ok'])
  t.same(res.body.results.map((r: { details: { epoch: number } }) => r.details.epoch), [0, 1])
  t.equal(JSON.parse(res.body.results[1].content).content, 'written by toolgate')
})

t.test('from an untrusted server every tool is a write, whatever its annotations say', async (t) => {
  await writeFile(join(dir, 'a.txt'), 'alpha')
  t.equal((await get(app, '/v1/tools/loose_read_text_file')).body.readOnly, false)
  const res = await runBatch(app, [
    { id: 'r1', name: 'loose_read_text_file', arguments: { path: join(dir, 'a.txt') } },
    { id: 'r2', name: 'loose_read_text_file', arguments: { path: join(dir, 'a.txt') } }
  ])
  t.same(res.body.results.map((r: { details: { epoch: number } }) => r.details.epoch), [0, 1], 'barriers, one epoch each')
})

t.test("a tool's isError result is an error the model reads", async (t) => {
  const res = await runBatch(app, [{ id: 'r', name: 'files_read_text_file', arguments: { path: '/etc/hostname' } }])
  const [r] = res.body.results
  t.equal(r.status, 'error')
  t.equal(r.isError, true)
  t.match(r.content, /denied|outside|not allowed/i)
})

t.test('no argument or file content reaches the logs', async (t) => {
  const canary = 'canary-7f3a9c-never-logged'
  const res = await runBatch(app, [{ id: 'w', name: 'files_write_file', arguments: { path: join(dir, 'canary.txt'), content: canary } }])
  t.equal(res.body.results[0].status, 'ok')
  t.notOk(logs.join('').includes(canary))
  t.notOk(logs.join('').includes('canary.txt'))
  const metrics = await get(app, '/metrics')
  t.notOk(String(metrics.body).includes(canary))
  t.match(String(metrics.body), /toolgate_mcp_server_up\{server="files"\} 1/)
})

t.test('toolgate stops the process when it closes, and starts it again when it dies', async (t) => {
  const conn = app.services.mcp.connection('files')!
  const first = conn.pid!
  t.type(first, 'number')
  const down = app.services.mcp.whenState('files', 'down')
  process.kill(first, 'SIGKILL')
  await down
  const view = (await get(app, '/v1/mcp-servers/files')).body
  t.equal(view.state, 'down')
  t.match(view.lastError, /closed/)
  // Reconnecting is due after a backoff; a refresh asks for it now.
  const refreshed = await post(app, '/v1/mcp-servers/files/refresh', {})
  t.equal(refreshed.status, 200)
  t.equal(refreshed.body.state, 'ready')
  const second = conn.pid!
  t.not(second, first)
  await app.close()
  t.throws(() => process.kill(second, 0), { code: 'ESRCH' }, 'the process is gone')
})
