import t from 'tap'
import { fingerprint } from '../../src/repeat/exact.js'
import { callFingerprint, compileIgnoredArguments, withoutIgnored } from '../../src/repeat/loops.js'
import { cycleMessage } from '../../src/repeat/kinds/cycle.js'
import { errorsMessage } from '../../src/repeat/kinds/errors.js'
import { noProgressMessage } from '../../src/repeat/kinds/no-progress.js'

const ignored = compileIgnoredArguments(['/request_id', '/meta/timestamp', '/items/0', '/a~1b'])

t.test('ignored members are removed from a copy; the arguments given stay whole', async (t) => {
  const args = { request_id: 'r1', path: 'x', meta: { timestamp: 1, user: 'u' }, items: [1, 2], 'a/b': true }
  const before = structuredClone(args)
  t.same(withoutIgnored(args, ignored), { path: 'x', meta: { user: 'u' }, items: [2] })
  t.same(args, before, 'the executor still receives every member')
})

t.test('pointers that lead nowhere remove nothing and copy nothing', async (t) => {
  const args = { path: 'x', meta: 'not an object' }
  t.equal(withoutIgnored(args, ignored), args)
})

t.test('two calls differing only in ignored members have one fingerprint', async (t) => {
  const a = { request_id: 'r1', path: 'x' }
  const b = { path: 'x', request_id: 'r2' }
  t.equal(callFingerprint('read', ignored, a, JSON.stringify(a)), callFingerprint('read', ignored, b, JSON.stringify(b)))
  t.equal(callFingerprint('read', ignored, a, JSON.stringify(a)), fingerprint('read', { path: 'x' }))
  t.not(callFingerprint('read', ignored, a, JSON.stringify(a)), callFingerprint('read', ignored, { path: 'y' }, '{"path":"y"}'))
})

t.test('a tool that ignores nothing fingerprints the canonical text it is given', async (t) => {
  t.equal(callFingerprint('read', [], { path: 'x' }, '{"path":"x"}'), fingerprint('read', { path: 'x' }))
  t.equal(callFingerprint('read', ignored, 'not json', '"not json"'), fingerprint('read', 'not json'), 'a raw string is fingerprinted as it is')
})

t.test('the empty pointer and malformed pointers are refused', async (t) => {
  t.throws(() => compileIgnoredArguments(['']), /inside the arguments/)
  t.throws(() => compileIgnoredArguments(['request_id']), /must be empty or start with/)
  t.throws(() => compileIgnoredArguments(['/a~2']), /~/)
})

t.test('policy messages name the tools and the kind within 512 characters, whatever the names', async (t) => {
  const long = 'x'.repeat(5000)
  for (const message of [
    cycleMessage(['look', 'move'], 3), cycleMessage([long, long, long], 6),
    errorsMessage(['write'], 3), errorsMessage([long, long, long], 1_000_000),
    noProgressMessage('status', 10), noProgressMessage(`a\nb${long}`, 30)
  ]) {
    t.ok(message.length <= 512, `${message.length} characters`)
    t.match(message, /Loop detected \((cycle|errors|no_progress)\)/)
    t.notMatch(message, /\n/)
  }
  t.match(cycleMessage(['look', 'move'], 3), /"look" → "move".*3 times/)
  t.match(errorsMessage(['write', 'read'], 4), /last 4 tool calls.*"write", "read"/)
  t.match(noProgressMessage('status', 10), /"status" 10 times/)
})
