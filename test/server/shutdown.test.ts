import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { request } from 'undici'
import { sha256Hex } from '../../src/auth/keys.js'
import { sleep, startExecutor, tool } from '../helper.js'
import { type Build, builtService } from './build.js'

// Bounded work, not a deadline: room for a loaded 2-core machine beyond tap's 120 s default.
t.setTimeout(300_000)

type Tap = { teardown: (fn: () => unknown) => void }

interface Server {
  child: ChildProcess
  url: string
  /** Parsed JSON log lines so far. */
  logs: Array<Record<string, unknown>>
  stderr: () => string
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}

/** Starts `node src/server.js` of the build and waits for its "toolgate ready" line. */
async function startServer (t: Tap, build: Build, env: Record<string, string>): Promise<Server> {
  const child = spawn(process.execPath, [build.server], {
    cwd: build.dir,
    env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await exited
  })
  const logs: Array<Record<string, unknown>> = []
  let stderr = ''
  child.stderr!.setEncoding('utf8').on('data', (c: string) => { stderr += c })
  let pending = ''
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      pending += chunk
      const lines = pending.split('\n')
      pending = lines.pop()!
      for (const line of lines) {
        try {
          const entry = JSON.parse(line) as Record<string, unknown>
          logs.push(entry)
          if (entry.msg === 'toolgate ready') resolve(String(entry.address))
        } catch { /* not a log line */ }
      }
    })
    void exited.then(({ code }) => reject(new Error(`the server exited with ${code} before it was ready: ${stderr}`)))
  })
  return { child, url: await ready, logs, stderr: () => stderr, exited }
}

async function send (url: string, method: 'GET' | 'POST', body?: unknown): Promise<{ status: number, body: any }> {
  const res = await request(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.body.text()
  return { status: res.statusCode, body: text === '' ? undefined : JSON.parse(text) }
}

async function until (what: string, check: () => Promise<boolean> | boolean, attempts = 200): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return
    await sleep(25)
  }
  throw new Error(`timed out waiting until ${what}`)
}

t.test('the real process', async (t) => {
  const build = builtService()
  // The tools and keys files of these tests: the build is shared, and only read.
  const files = await mkdtemp(join(tmpdir(), 'toolgate-shutdown-'))
  t.teardown(() => rm(files, { recursive: true, force: true }))

  t.test('on SIGTERM it stops taking batches, lets the batch in flight finish with its results, and exits 0', async (t) => {
    const ex = await startExecutor(t)
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => { release = resolve })
    ex.on('slow', async () => {
      await held
      return { content: 'slow done' }
    })
    const toolsFile = join(files, 'tools-drain.json')
    // The slow call is held by the test, not by a clock: its timeout only has to outlast a loaded machine.
    await writeFile(toolsFile, JSON.stringify({ tools: [tool('slow', ex.url, { executor: { url: `${ex.url}/tools/slow`, timeoutMs: 120_000 } }), tool('look', ex.url, { readOnly: true })] }))
    const server = await startServer(t, build, { TOOLGATE_TOOLS_FILE: toolsFile, TOOLGATE_SHUTDOWN_TIMEOUT_MS: '20000' })
    t.ok(server.logs.some((l) => l.level === 40 && /runs OPEN/.test(String(l.msg))), 'open mode is announced with a warning')

    t.equal((await send(`${server.url}/v1/runs`, 'POST', { runId: 'r1' })).status, 201)
    t.equal((await send(`${server.url}/v1/runs`, 'POST', { runId: 'r2' })).status, 201)
    t.equal((await send(`${server.url}/readyz`, 'GET')).status, 200)

    const inFlight = send(`${server.url}/v1/runs/r1/batches`, 'POST', {
      batchId: 'b1',
      calls: [{ id: 'a', name: 'look', arguments: { x: 1 } }, { id: 'b', name: 'slow', arguments: { x: 2 } }]
    })
    await until('the slow call reaches the executor', () => ex.calls.some((c) => c.tool === 'slow'))

    server.child.kill('SIGTERM')
    await until('the drain is logged', () => server.logs.some((l) => /draining/.test(String(l.msg))))
    const ready = await send(`${server.url}/readyz`, 'GET')
    t.equal(ready.status, 503, '/readyz turns 503')
    const refused = await send(`${server.url}/v1/runs/r2/batches`, 'POST', { calls: [{ id: 'c', name: 'look', arguments: {} }] })
    t.equal(refused.status, 503, 'a new batch is refused')
    t.equal(refused.body.code, 'overloaded')
    t.equal(server.child.exitCode, null, 'the process waits for the batch in flight')

    release()
    const done = await inFlight
    t.equal(done.status, 200, 'the batch in flight is answered')
    t.same(done.body.results.map((r: { callId: string, status: string }) => [r.callId, r.status]), [['a', 'ok'], ['b', 'ok']])
    t.equal(done.body.results[1].content, 'slow done')
    t.same(await server.exited, { code: 0, signal: null }, 'the process exits 0')
    t.ok(server.logs.some((l) => l.msg === 'stopped'))
    t.equal(ex.calls.filter((c) => c.callId === 'c').length, 0, 'the refused batch never reached the executor')
  })

  t.test('a batch still running at TOOLGATE_SHUTDOWN_TIMEOUT_MS does not hold the exit', async (t) => {
    const ex = await startExecutor(t)
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => { release = resolve })
    t.teardown(() => release())
    ex.on('stuck', async () => {
      await held
      return { content: 'too late' }
    })
    const toolsFile = join(files, 'tools-stuck.json')
    await writeFile(toolsFile, JSON.stringify({ tools: [tool('stuck', ex.url, { executor: { url: `${ex.url}/tools/stuck`, timeoutMs: 600_000 } })] }))
    const server = await startServer(t, build, { TOOLGATE_TOOLS_FILE: toolsFile, TOOLGATE_SHUTDOWN_TIMEOUT_MS: '300' })
    t.equal((await send(`${server.url}/v1/runs`, 'POST', { runId: 'r' })).status, 201)
    const stuck = send(`${server.url}/v1/runs/r/batches`, 'POST', { calls: [{ id: 'a', name: 'stuck' }] }).catch((err: Error) => err)
    await until('the call reaches the executor', () => ex.calls.length > 0)
    server.child.kill('SIGTERM')
    t.same(await server.exited, { code: 0, signal: null }, 'the process exits 0 after the deadline')
    t.ok(server.logs.some((l) => /deadline passed/.test(String(l.msg))), 'and says a batch was cut off')
    t.type(await stuck, Error, 'the cut-off client sees its connection end, not an answer')
  })

  t.test('a bad keys file stops the start with exit code 2 and every problem listed', async (t) => {
    const keysFile = join(files, 'keys-bad.json')
    await writeFile(keysFile, JSON.stringify({
      keys: [
        { key: 'has a blank', tenant: 'acme', roles: ['orchestrator'] },
        { sha256: sha256Hex('a-long-enough-key-0123456'), tenant: 'acme', roles: ['superuser'] },
        { tenant: 'x', roles: ['admin'] }
      ]
    }))
    const child = spawn(process.execPath, [build.server], {
      cwd: build.dir,
      env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', TOOLGATE_API_KEYS_FILE: keysFile, TOOLGATE_TOOLS_FILE: join(files, 'none.json') },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c })
    child.stdout.resume()
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    t.equal(code, 2)
    t.match(stderr, /keys-bad\.json/)
    t.match(stderr, /\/keys\/0\/key:/)
    t.match(stderr, /\/keys\/1\/roles\/0: must be one of orchestrator, admin, operator/)
    t.match(stderr, /\/keys\/2: give exactly one of "key" or "sha256"/)
  })

  t.test('a short plain key starts the service with a warning that names its place, and works', async (t) => {
    const keysFile = join(files, 'keys-short.json')
    await writeFile(keysFile, JSON.stringify({ keys: [{ key: 'sesame', tenant: 'acme', roles: ['orchestrator'] }] }))
    const toolsFile = join(files, 'tools-none.json')
    await writeFile(toolsFile, JSON.stringify({ tools: [] }))
    const server = await startServer(t, build, { TOOLGATE_API_KEYS_FILE: keysFile, TOOLGATE_TOOLS_FILE: toolsFile })
    const warning = server.logs.find((l) => l.msg === 'weak API key')
    t.equal(warning?.level, 40, 'a warning at start')
    t.match(String(warning?.problem), /^\/keys\/0\/key: 6 characters is easy to guess/)
    t.notOk(server.logs.some((l) => JSON.stringify(l).includes('sesame')), 'no line holds the key')
    const res = await request(`${server.url}/v1/runs`, { method: 'POST', headers: { authorization: 'Bearer sesame', 'content-type': 'application/json' }, body: '{}' })
    t.equal(res.statusCode, 201, 'the key is accepted')
    await res.body.dump()
    server.child.kill('SIGTERM')
    await server.exited
  })
})
