import { spawnSync } from 'node:child_process'
import { Writable } from 'node:stream'
import t from 'tap'
import { REDACTED, createLogger } from '../../src/logger.js'

function capture (): { lines: () => Array<Record<string, unknown>>, stream: Writable } {
  const out: string[] = []
  return {
    lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>),
    stream: new Writable({ write (chunk, _e, cb) { out.push(String(chunk)); cb() } })
  }
}

t.test('a line names the service, an ISO time, the bindings of a child logger and its own fields, in that order', async (t) => {
  const out = capture()
  createLogger('info', out.stream).child({ reqId: 'r-1', runId: 'run-1' }).info({ callId: 'c1', status: 'ok' }, 'call settled')
  const [line] = out.lines()
  t.strictSame(Object.keys(line!), ['level', 'time', 'service', 'reqId', 'runId', 'callId', 'status', 'msg'])
  t.match(line, { level: 30, service: 'toolgate', reqId: 'r-1', callId: 'c1', msg: 'call settled' })
  t.match(String(line!.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
})

t.test("the mixin option adds its fields to every line, the child's too, and they pass the censor", async (t) => {
  const out = capture()
  const log = createLogger('info', out.stream, { mixin: () => ({ trace_id: 'abc', body: 'secret-zz1' }) })
  log.info({ a: 1 }, 'one')
  log.child({ runId: 'r' }).warn('two')
  const lines = out.lines()
  t.equal(lines.length, 2)
  for (const line of lines) t.match(line, { trace_id: 'abc', body: REDACTED })
  t.notMatch(JSON.stringify(lines), /secret-zz1/)
})

t.test('nothing below the level is written', async (t) => {
  const out = capture()
  const log = createLogger('warn', out.stream)
  log.info('quiet')
  log.error('loud')
  t.strictSame(out.lines().map((l) => l.msg), ['loud'])
})

t.test('lines on stdout still pending when the process exits are written: process.exit loses none', async (t) => {
  // With the loader this test runs under (TypeScript), in a process of its own.
  const run = spawnSync(process.execPath, [...process.execArgv, new URL('./exit-lines.ts', import.meta.url).pathname], { encoding: 'utf8' })
  t.equal(run.status, 0, run.stderr)
  const lines = run.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { i: number })
  t.strictSame(lines.map((l) => l.i), [0, 1, 2])
})
