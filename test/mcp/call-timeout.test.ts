import t from 'tap'
import { ErrorCode, type McpError } from '@modelcontextprotocol/sdk/types.js'
import { CallTimeout } from '../../src/mcp/call-timeout.js'
import { FakeClock } from '../clock.js'

/**
 * A tools/call's timeout (SPEC section 18) on a clock the test moves: the
 * idle time that progress restarts, the total bound, and both held while a
 * question of the server's waits for its answer.
 */
const IDLE = 300
const TOTAL = 1000

function timed (): { clock: FakeClock, timeout: CallTimeout, expired: McpError[] } {
  const clock = new FakeClock()
  const expired: McpError[] = []
  const timeout = new CallTimeout(clock, IDLE, TOTAL, (reason) => { expired.push(reason) })
  return { clock, timeout, expired }
}

t.test('without progress the call ends after the idle time, with the SDK timeout error naming it', async (t) => {
  const { clock, expired } = timed()
  clock.advance(IDLE - 1)
  t.equal(expired.length, 0)
  clock.advance(1)
  t.equal(expired.length, 1)
  t.equal(expired[0]!.code, ErrorCode.RequestTimeout)
  t.same(expired[0]!.data, { timeout: IDLE })
  clock.advance(10 * TOTAL)
  t.equal(expired.length, 1, 'it ends the call once')
  t.equal(clock.pending, 0, 'no timer is left')
})

t.test('progress restarts the idle time, and a call that keeps reporting progress still ends at the total', async (t) => {
  const { clock, timeout, expired } = timed()
  // Progress at 200, 400, 600 and 800: the idle time would end the call at 1100.
  for (let i = 0; i < 4; i++) {
    clock.advance(200)
    timeout.progress()
  }
  t.equal(expired.length, 0, 'past the idle time several times over')
  clock.advance(199)
  t.equal(expired.length, 0)
  clock.advance(1)
  t.equal(expired.length, 1)
  t.same(expired[0]!.data, { timeout: TOTAL })
})

t.test('a pause holds both clocks: the idle time restarts in full on resume, and the total keeps what it had left', async (t) => {
  const { clock, timeout, expired } = timed()
  clock.advance(200)
  timeout.progress()
  clock.advance(200)
  const resume = timeout.pause()
  clock.advance(100 * TOTAL)
  timeout.progress()
  t.equal(expired.length, 0, 'nothing runs while paused, progress included')
  resume()
  clock.advance(IDLE - 1)
  t.equal(expired.length, 0, 'the idle time restarted in full')
  timeout.progress()
  // 400 of the total were used before the pause and 299 after it: 301 are left, and the idle time 300.
  clock.advance(150)
  timeout.progress()
  clock.advance(150)
  t.equal(expired.length, 0)
  clock.advance(1)
  t.equal(expired.length, 1)
  t.same(expired[0]!.data, { timeout: TOTAL }, 'the total ended it')
})

t.test('pauses nest: the clock runs again once every question is answered, and resuming twice counts once', async (t) => {
  const { clock, timeout, expired } = timed()
  const first = timeout.pause()
  const second = timeout.pause()
  first()
  first()
  clock.advance(10 * TOTAL)
  t.equal(expired.length, 0, 'one question still waits')
  second()
  clock.advance(IDLE)
  t.equal(expired.length, 1)
})

t.test('a stopped timeout fires nothing, paused or not', async (t) => {
  const { clock, timeout, expired } = timed()
  const resume = timeout.pause()
  timeout.stop()
  resume()
  timeout.progress()
  clock.advance(10 * TOTAL)
  t.equal(expired.length, 0)
  t.equal(clock.pending, 0)
})
