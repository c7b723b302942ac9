/**
 * The schedule of calls that arrive one at a time (src/schedule/arrivals.ts),
 * step by step: which call may start, in what order, and what an uncertain
 * write blocks.
 */
import { getEventListeners } from 'node:events'
import t from 'tap'
import { type Arrival, type ArrivalClass, ArrivalSchedule, type Turn } from '../../src/schedule/arrivals.js'

function cls (over: Partial<ArrivalClass> = {}): ArrivalClass {
  return { overlap: true, alone: false, readOnly: true, conflictKey: null, maxConcurrent: 10, ...over }
}

/** A call of `s`, asked for its turn at once: `turn` holds what it got, once it got it. */
function call (s: ArrivalSchedule, c?: ArrivalClass, signal?: AbortSignal): { a: Arrival, turn: () => Turn | null, started: Promise<Turn> } {
  const a = s.arrive()
  let got: Turn | null = null
  if (c !== undefined) a.describe(c)
  const started = a.start(signal).then((turn) => { got = turn; return turn })
  return { a, turn: () => got, started }
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

t.test('calls eligible to overlap start together, up to the cap, in arrival order', async (t) => {
  const s = new ArrivalSchedule()
  const calls = [0, 1, 2].map(() => call(s, cls({ maxConcurrent: 2 })))
  await tick()
  t.same(calls.map((c) => c.turn()?.kind ?? null), ['go', 'go', null], 'the third waits for a slot')
  calls[1]!.a.settled(null)
  await tick()
  t.equal(calls[2]!.turn()?.kind, 'go', 'and takes the slot the second left')
})

t.test('a call not yet prepared holds back the calls behind it, not those before it', async (t) => {
  const s = new ArrivalSchedule()
  const first = call(s, cls())
  const unknown = call(s)
  const after = call(s, cls())
  await tick()
  t.equal(first.turn()?.kind, 'go')
  t.equal(unknown.turn(), null)
  t.equal(after.turn(), null, 'it may be a barrier')
  unknown.a.describe(cls())
  await tick()
  t.equal(unknown.turn()?.kind, 'go')
  t.equal(after.turn()?.kind, 'go')
})

t.test('a barrier waits for every earlier call and runs alone; a call after a waiting barrier waits for it', async (t) => {
  const s = new ArrivalSchedule()
  const read = call(s, cls())
  const barrier = call(s, cls({ overlap: false, readOnly: false }))
  const later = call(s, cls())
  await tick()
  t.equal(read.turn()?.kind, 'go')
  t.equal(barrier.turn(), null)
  t.equal(later.turn(), null, 'behind the waiting barrier')
  read.a.settled(null)
  await tick()
  t.equal(barrier.turn()?.kind, 'go')
  t.equal(later.turn(), null, 'the barrier runs alone')
  barrier.a.settled(null)
  await tick()
  t.equal(later.turn()?.kind, 'go')
})

t.test('calls of one conflict key never overlap and keep their order; other keys pass them', async (t) => {
  const s = new ArrivalSchedule()
  const a1 = call(s, cls({ readOnly: false, conflictKey: 'tile:1' }))
  const a2 = call(s, cls({ readOnly: false, conflictKey: 'tile:1' }))
  const b = call(s, cls({ readOnly: false, conflictKey: 'tile:2' }))
  const a3 = call(s, cls({ readOnly: false, conflictKey: 'tile:1' }))
  await tick()
  t.same([a1, a2, b, a3].map((c) => c.turn()?.kind ?? null), ['go', null, 'go', null])
  a1.a.settled(null)
  await tick()
  t.same([a2, a3].map((c) => c.turn()?.kind ?? null), ['go', null], 'the next of the key, in arrival order')
})

t.test('an uncertain write blocks the writes waiting behind it (its key, or every write without one), and not the reads or those that started', async (t) => {
  const s = new ArrivalSchedule()
  const u = call(s, cls({ readOnly: false, conflictKey: 'tile:1' }))
  const running = call(s, cls({ readOnly: false, conflictKey: 'tile:2' }))
  const sameKey = call(s, cls({ readOnly: false, conflictKey: 'tile:1' }))
  const read = call(s, cls({ conflictKey: 'tile:1' }))
  const unprepared = call(s)
  await tick()
  t.equal(running.turn()?.kind, 'go')
  u.a.settled({ callId: 'call_u', conflictKey: 'tile:1' })
  unprepared.a.describe(cls({ readOnly: false, conflictKey: 'tile:1' }))
  await tick()
  t.same(sameKey.turn(), { kind: 'blocked', by: 'call_u' })
  t.same(unprepared.turn(), { kind: 'blocked', by: 'call_u' }, 'prepared after it settled, it had arrived before')
  t.equal(read.turn()?.kind, 'go', 'a read is not blocked')
  const later = call(s, cls({ readOnly: false, conflictKey: 'tile:1' }))
  await tick()
  t.equal(later.turn(), null, "a write that arrived after it settled is not blocked by it: it waits its turn (the run's own record blocks a retry)")
  const keyless = new ArrivalSchedule()
  const k = call(keyless, cls({ readOnly: false, maxConcurrent: 1 }))
  const other = call(keyless, cls({ readOnly: false, conflictKey: 'any', maxConcurrent: 1 }))
  await tick()
  k.a.settled({ callId: 'call_k', conflictKey: null })
  await tick()
  t.same(other.turn(), { kind: 'blocked', by: 'call_k' }, 'a write without a key blocks every waiting write')
})

t.test('a call cancelled while it waits gets no turn and holds nothing back', async (t) => {
  const s = new ArrivalSchedule()
  const first = call(s, cls({ readOnly: false, conflictKey: 'k' }))
  const ac = new AbortController()
  const waiting = call(s, cls({ readOnly: false, conflictKey: 'k' }), ac.signal)
  const after = call(s, cls({ readOnly: false, conflictKey: 'k' }))
  await tick()
  ac.abort()
  t.same(await waiting.started, { kind: 'cancelled' })
  first.a.settled(null)
  await tick()
  t.equal(after.turn()?.kind, 'go')
  after.a.settled(null)
  t.equal(s.idle, true)
})

t.test('a call whose turn comes at once leaves nothing on its signal; one that waits listens until its turn', async (t) => {
  const s = new ArrivalSchedule()
  const first = new AbortController()
  const running = call(s, cls({ maxConcurrent: 1 }), first.signal)
  t.equal(getEventListeners(first.signal, 'abort').length, 0, 'the first call went at once: no listener')
  const second = new AbortController()
  const waiting = call(s, cls({ maxConcurrent: 1 }), second.signal)
  t.equal(getEventListeners(second.signal, 'abort').length, 1, 'the second waits for the slot, cancellable')
  await running.started
  running.a.settled(null)
  t.equal((await waiting.started).kind, 'go')
  await tick()
  t.equal(getEventListeners(second.signal, 'abort').length, 0, 'its turn came: the listener is gone')
})

t.test('a call that runs alone waits for every earlier call, and every later one waits for it', async (t) => {
  const s = new ArrivalSchedule()
  const read = call(s, cls())
  const alone = call(s, cls({ overlap: false, alone: true, readOnly: false }))
  await tick()
  t.equal(s.sharing, 1, 'the call waiting runs alone: only the read runs under a shared lease')
  const later = call(s, cls())
  await tick()
  t.equal(alone.turn(), null)
  read.a.settled(null)
  await tick()
  t.same(alone.turn(), { kind: 'go', alone: true })
  t.equal(later.turn(), null)
  alone.a.leave()
  await tick()
  t.same(later.turn(), { kind: 'go', alone: false })
})
