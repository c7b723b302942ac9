import { type ChildProcessByStdio, spawn } from 'node:child_process'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { builtService } from './build.js'

t.setTimeout(300_000)

/** Runs `body` as an ES module in a new node process, after `createLogger` is imported from the built service. */
function runWithLogger (body: string): ChildProcessByStdio<null, Readable, Readable> {
  const build = builtService()
  const logger = pathToFileURL(join(build.dir, 'src/logger.js')).href
  const script = `const { createLogger } = await import(${JSON.stringify(logger)})\n${body}`
  return spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
}

// The default destination: stdout, the lines of one event-loop turn written
// together at its end. A burst of lines logged in one turn and cut short by
// process.exit (the turn never ends) must all arrive, whole, in order, with
// their UTF-8 intact: what is pending is written on exit.
t.test('the stdout logger loses no line of a burst cut short by process.exit, and keeps UTF-8 and order', async (t) => {
  const child = runWithLogger(`
    const log = createLogger('info')
    for (let i = 0; i < 5000; i++) log.info({ i, note: 'é—🙂'.repeat(1 + (i % 7)) }, 'burst')
    process.exit(0)
  `)
  const out: Buffer[] = []
  let stderr = ''
  child.stdout.on('data', (c: Buffer) => out.push(c))
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c })
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  t.equal(code, 0, stderr)

  const lines = Buffer.concat(out).toString('utf8').split('\n')
  t.equal(lines.pop(), '', 'the output ends with a whole line')
  t.equal(lines.length, 5000, 'every line arrived')
  let inOrder = true
  let intact = true
  for (const [n, line] of lines.entries()) {
    const entry = JSON.parse(line) as { i: number, note: string, msg: string }
    if (entry.i !== n) inOrder = false
    if (entry.note !== 'é—🙂'.repeat(1 + (n % 7)) || entry.msg !== 'burst') intact = false
  }
  t.ok(inOrder, 'lines keep the order they were written in')
  t.ok(intact, 'every line is whole, its UTF-8 text unchanged')
})

// A quiet process shows each line at once (at the end of the turn that logged
// it), not when some buffer fills; two loggers on stdout keep one order.
t.test('a line logged by an idle process reaches stdout within its turn, and loggers sharing stdout keep their order', async (t) => {
  const child = runWithLogger(`
    const a = createLogger('info')
    const b = createLogger('info')
    a.info('one')
    b.info('two')
    a.info('three')
    // Stays alive (the parent kills it) and logs nothing more.
    setInterval(() => {}, 60_000)
  `)
  t.teardown(() => { child.kill('SIGKILL') })
  let text = ''
  const lines = await new Promise<string[]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only got ${JSON.stringify(text)}`)), 20_000)
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      text += c
      const whole = text.split('\n').slice(0, -1)
      if (whole.length >= 3) {
        clearTimeout(timer)
        resolve(whole)
      }
    })
  })
  t.same(lines.map((l) => (JSON.parse(l) as { msg: string }).msg), ['one', 'two', 'three'])
  t.equal(child.exitCode, null, 'the lines arrived while the process was still running')
})
