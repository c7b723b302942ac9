import { pino } from 'pino'
import t from 'tap'
import { type LineFields, createLogger, fieldsText, logFields } from '../../src/logger.js'

/** A destination that keeps what it is given, line by line. */
function capture (): { lines: string[], stream: pino.DestinationStream } {
  const lines: string[] = []
  return { lines, stream: { write: (s: string) => { lines.push(s) } } }
}

/** The `time` field, which differs from one line to the next, made the same. */
const untimed = (line: string): string => line.replace(/"time":"[^"]*"/, '"time":"T"')

const SAMPLES: LineFields[] = [
  { reqId: 'req-1', method: 'POST', route: '/v1/runs/:runId/batches', status: 200, ms: 1.23 },
  { reqId: 'req-2', runId: 'run_e932cc4f-3253-4542-84c5-3523f7f117d1', turn: 3, calls: 10, outcome: 'completed', durationMs: 0.5, replayed: true },
  { quote: 'say "hi"', backslash: 'a\\b', newline: 'one\ntwo', tab: '\t', nul: '\u0000', unicode: 'é—🙂', long: 'x'.repeat(300) + '"' },
  { zero: 0, negative: -0.25, big: 1e21, small: 5e-7, notANumber: Number.NaN, infinite: Number.POSITIVE_INFINITY, no: false }
]

t.test("logFields writes, byte for byte, the line pino writes for the same fields, the logger's bindings included", async (t) => {
  for (const child of [false, true]) {
    const ours = capture()
    const theirs = capture()
    const a = createLogger('info', ours.stream)
    const b = createLogger('info', theirs.stream)
    const la = child ? a.child({ component: 'x "y"' }) : a
    const lb = child ? b.child({ component: 'x "y"' }) : b
    // The line must be logFields' own, not pino's path taken as a fallback.
    la.info = la.error = () => { t.fail("logFields went through pino's own method") }
    for (const fields of SAMPLES) {
      logFields(la, 'info', fieldsText(fields), 'batch "completed"')
      lb.info(fields, 'batch "completed"')
      logFields(la, 'error', fieldsText(fields), 'request')
      lb.error(fields, 'request')
    }
    t.equal(ours.lines.length, SAMPLES.length * 2)
    t.same(ours.lines.map(untimed), theirs.lines.map(untimed), child ? 'a child logger' : 'the root logger')
    for (const line of ours.lines) t.doesNotThrow(() => JSON.parse(line), 'each line is JSON')
  }
})

t.test('logFields writes nothing below the logger level', async (t) => {
  const out = capture()
  const log = createLogger('warn', out.stream)
  logFields(log, 'info', ',"a":1', 'quiet')
  logFields(log, 'error', ',"a":1', 'loud')
  t.equal(out.lines.length, 1)
  t.match(JSON.parse(out.lines[0]!), { level: 50, a: 1, msg: 'loud' })
})

t.test('a logger logFields cannot reproduce gets the fields through its own method', async (t) => {
  // A mixin adds to every line; pino's own path has to write it.
  const out = capture()
  const log = pino({ mixin: () => ({ extra: 'mixed in' }) }, out.stream)
  logFields(log, 'info', fieldsText(SAMPLES[0]!), 'request')
  t.match(JSON.parse(out.lines[0]!), { ...SAMPLES[0], extra: 'mixed in', msg: 'request', level: 30 })
  // A logger not made by createLogger has no censor: its own path, where it could have one.
  const plain = capture()
  logFields(pino({}, plain.stream), 'info', ',"a":"b"', 'request')
  t.match(JSON.parse(plain.lines[0]!), { a: 'b', msg: 'request' })
})

t.test("a lone surrogate is escaped, so the line stays well-formed UTF-8 JSON", async (t) => {
  const out = capture()
  logFields(createLogger('info', out.stream), 'info', fieldsText({ odd: 'a\ud800b' }), 'request')
  t.ok(out.lines[0]!.includes('"odd":"a\\ud800b"'))
  t.equal(JSON.parse(out.lines[0]!).odd, 'a\ud800b')
})
