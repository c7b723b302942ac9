/**
 * Refusing to run open with real tools where others can reach the service,
 * as a table of cases and as the real process does it.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { isLoopback, openModeRefusal } from '../../src/auth/open-mode.js'
import { builtService } from './build.js'

t.setTimeout(300_000)

t.test('open mode with real tools on a reachable host is refused unless allowed', async (t) => {
  const base = { open: true, realTools: true, host: '0.0.0.0', allowOpen: false }
  t.match(openModeRefusal(base), /TOOLGATE_ALLOW_OPEN/)
  t.match(openModeRefusal({ ...base, host: '10.0.0.5' }), /10\.0\.0\.5/)
  t.equal(openModeRefusal({ ...base, allowOpen: true }), null, 'allowed explicitly')
  t.equal(openModeRefusal({ ...base, open: false }), null, 'keys given')
  t.equal(openModeRefusal({ ...base, realTools: false }), null, 'the bundled demo stays open')
  for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) {
    t.ok(isLoopback(host), `${host} is loopback`)
    t.equal(openModeRefusal({ ...base, host }), null, `${host}: only this machine can call`)
  }
  for (const host of ['0.0.0.0', '::', '192.168.1.2', 'example.com', '128.0.0.1']) t.notOk(isLoopback(host), `${host} is not loopback`)
})

t.test('the process exits 2 and says why when started open with a tools file on 0.0.0.0', async (t) => {
  const build = builtService()
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-open-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const toolsFile = join(dir, 'tools.json')
  await writeFile(toolsFile, JSON.stringify({ tools: [] }))
  const run = async (env: Record<string, string>): Promise<{ code: number | null, stderr: string }> => {
    const child = spawn(process.execPath, [build.server], {
      cwd: build.dir,
      env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'fatal', TOOLGATE_TOOLS_FILE: toolsFile, ...env },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c })
    child.stdout.resume()
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    return { code, stderr }
  }
  const refused = await run({ HOST: '0.0.0.0' })
  t.equal(refused.code, 2)
  t.match(refused.stderr, /Cannot start: .*TOOLGATE_API_KEYS_FILE/)
})

t.test('with HOST unset, a tools file without a keys file starts open on 127.0.0.1 and says how to serve others; a misspelt setting is warned about', async (t) => {
  const build = builtService()
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-open-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const toolsFile = join(dir, 'tools.json')
  await writeFile(toolsFile, JSON.stringify({ tools: [] }))
  const child = spawn(process.execPath, [build.server], {
    cwd: build.dir,
    env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'info', TOOLGATE_TOOLS_FILE: toolsFile, TOOLGATE_MAX_CONCURENT_TOOLS: '4' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.teardown(() => { child.kill('SIGKILL') })
  const lines: any[] = []
  let buffered = ''
  const ready = await new Promise<any>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`exited ${String(code)}`)))
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk
      for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
        const line = JSON.parse(buffered.slice(0, i))
        buffered = buffered.slice(i + 1)
        lines.push(line)
        if (line.msg === 'toolgate ready') resolve(line)
      }
    })
  })
  t.match(ready.address, /^http:\/\/127\.0\.0\.1:\d+$/, 'listens on loopback only')
  t.ok(lines.some((l) => l.level === 40 && /OPEN.*127\.0\.0\.1 only.*HOST=0\.0\.0\.0/.test(l.msg)), 'the warning says how to serve other machines')
  t.ok(lines.some((l) => l.level === 40 && /TOOLGATE_MAX_CONCURENT_TOOLS .*did you mean TOOLGATE_MAX_CONCURRENT_TOOLS/.test(l.problem)), 'the misspelt setting is named')
  const res = await fetch(`${ready.address as string}/v1/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  t.equal(res.status, 201, 'open: no key needed')
})
