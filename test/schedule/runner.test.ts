import t from 'tap'
import { EpochRunner, type RunnerOptions } from '../../src/schedule/runner.js'
import { type DispatchOutcome, type Epoch, type SchedulableCall, type Settlement, StopSwitch } from '../../src/schedule/types.js'
import type { ExecutionHint } from '../../src/model/tool.js'

/** Lets every pending promise callback run; no timers, no real time. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

interface Spec { read?: boolean, key?: string, execution?: ExecutionHint }

/** Calls named by id, indexed in the order given (source order). */
function makeCalls (specs: Record<string, Spec>): Record<string, SchedulableCall> {
  const out: Record<string, SchedulableCall> = {}
  for (const [index, [id, s]] of Object.entries(specs).entries()) {
    out[id] = { index, id, readOnly: s.read === true, execution: s.execution ?? 'auto', conflictKey: s.key ?? null }
  }
  return out
}

interface Pending { resolve: (o: DispatchOutcome<string>) => void, reject: (err: unknown) => void }

/**
 * A runner over a fake dispatch: each dispatched call waits until the test
 * settles it by hand. Records every hook and the calls running at any moment.
 */
function harness (opts: Partial<RunnerOptions<string>> = {}) {
  const log: string[] = []
  const pending = new Map<string, Pending>()
  const running = new Set<string>()
  const started: string[] = []
  const settledCount = new Map<string, number>()
  let peak = 0
  const runner = new EpochRunner<string>({
    maxConcurrent: 8,
    onDispatchError: (call, err) => ({ value: `threw:${(err as Error).message}`, uncertain: !call.readOnly, closeBatch: false }),
    ...opts,
    hooks: {
      epochStarted: (e, n) => log.push(`epoch ${e} started (${n})`),
      callStarted: (c, e) => log.push(`${c.id} started in ${e}`),
      callSettled: (c, e, s) => {
        settledCount.set(c.id, (settledCount.get(c.id) ?? 0) + 1)
        log.push(`${c.id} ${s.kind}${s.kind === 'blocked' ? ` by ${s.blockedBy}` : ''} in ${e}`)
      },
      epochSettled: (e) => log.push(`epoch ${e} settled`),
      ...opts.hooks
    }
  })
  const dispatch = (call: SchedulableCall): Promise<DispatchOutcome<string>> => {
    started.push(call.id)
    running.add(call.id)
    peak = Math.max(peak, running.size)
    return new Promise((resolve, reject) => {
      pending.set(call.id, {
        resolve: (o) => { running.delete(call.id); resolve(o) },
        reject: (err) => { running.delete(call.id); reject(err) }
      })
    })
  }
  return {
    runner,
    log,
    started,
    running,
    settledCount,
    peak: () => peak,
    dispatch,
    /** Settles a running call, then lets the runner react. */
    async finish (id: string, o: Partial<DispatchOutcome<string>> = {}): Promise<void> {
      const p = pending.get(id)
      if (p === undefined) throw new Error(`${id} is not running`)
      pending.delete(id)
      p.resolve({ value: `done:${id}`, uncertain: false, closeBatch: false, ...o })
      await flush()
    },
    async fail (id: string, err: Error): Promise<void> {
      const p = pending.get(id)
      if (p === undefined) throw new Error(`${id} is not running`)
      pending.delete(id)
      p.reject(err)
      await flush()
    }
  }
}

function kinds (settled: ReadonlyArray<Settlement<string> | undefined>, calls: Record<string, SchedulableCall>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const c of Object.values(calls)) {
    const s = settled[c.index]
    out[c.id] = s === undefined ? 'missing' : s.kind === 'blocked' ? `blocked by ${s.blockedBy}` : s.kind
  }
  return out
}

t.test('the runner refuses a concurrency cap that is not a positive integer', (t) => {
  for (const bad of [0, -1, 1.5, Number.NaN]) {
    t.throws(() => new EpochRunner({ maxConcurrent: bad, onDispatchError: () => ({ value: 0, uncertain: false, closeBatch: false }) }),
      { name: 'TypeError', message: /Expected maxConcurrent to be a positive integer, got/ }, String(bad))
  }
  t.end()
})

t.test('no more than the cap run at once, and a freed slot is filled at once in source order', async (t) => {
  const calls = makeCalls({ a: { read: true }, b: { read: true }, c: { read: true }, d: { read: true }, e: { read: true }, f: { read: true } })
  const h = harness({ maxConcurrent: 2 })
  const done = h.runner.run([Object.values(calls)], h.dispatch)
  await flush()
  t.strictSame([...h.running], ['a', 'b'], 'the first two start')
  // Settle out of order; after each, the slot is taken by the next call in source order.
  for (const [id, next] of [['b', 'c'], ['a', 'd'], ['d', 'e'], ['c', 'f']] as const) {
    await h.finish(id)
    t.ok(h.running.has(next), `${next} starts as soon as ${id} settles`)
    t.equal(h.running.size, 2, 'no slot stays idle while a call waits')
  }
  await h.finish('e')
  await h.finish('f')
  await done
  t.strictSame(h.started, ['a', 'b', 'c', 'd', 'e', 'f'], 'started in source order')
  t.equal(h.peak(), 2)
})

t.test('a call waiting for a conflict key does not keep a startable later call from a free slot', async (t) => {
  const calls = makeCalls({ a: { read: true, key: 'k' }, b: { read: true, key: 'k' }, c: { read: true }, d: { read: true } })
  const h = harness({ maxConcurrent: 3 })
  const done = h.runner.run([Object.values(calls)], h.dispatch)
  await flush()
  t.strictSame([...h.running], ['a', 'c', 'd'], 'b waits for its key; c and d take the slots')
  await h.finish('c')
  t.strictSame([...h.running], ['a', 'd'], 'b still waits for a')
  await h.finish('a')
  t.strictSame([...h.running], ['d', 'b'])
  await h.finish('b')
  await h.finish('d')
  await done
})

t.test('calls with the same key never overlap and run in source order, reads included', async (t) => {
  const calls = makeCalls({
    a: { read: true, key: 'k1' },
    b: { key: 'k1' },
    c: { read: true, key: 'k2' },
    d: { read: true, key: 'k1' },
    e: { key: 'k2' },
    f: { read: true }
  })
  const h = harness({ maxConcurrent: 8 })
  const done = h.runner.run([Object.values(calls)], h.dispatch)
  await flush()
  t.strictSame([...h.running], ['a', 'c', 'f'])
  await h.finish('c')
  t.strictSame([...h.running], ['a', 'f', 'e'], 'e (k2) follows c')
  await h.finish('a')
  t.strictSame([...h.running], ['f', 'e', 'b'], 'b (k1) follows a; d (k1) waits for b')
  await h.finish('b')
  t.ok(h.running.has('d'), 'd follows b')
  await h.finish('d')
  await h.finish('e')
  await h.finish('f')
  await done
  const order = h.started.filter((id) => calls[id]!.conflictKey === 'k1')
  t.strictSame(order, ['a', 'b', 'd'], 'k1 in source order')
})

t.test('epoch k+1 starts only after every call of epoch k has settled', async (t) => {
  const calls = makeCalls({ a: { read: true }, b: { read: true }, c: {}, d: { read: true } })
  const h = harness()
  const epochs: Epoch[] = [[calls.a!, calls.b!], [calls.c!], [calls.d!]]
  const done = h.runner.run(epochs, h.dispatch)
  await flush()
  t.strictSame(h.started, ['a', 'b'])
  await h.finish('a')
  t.strictSame(h.started, ['a', 'b'], 'c waits for b')
  await h.finish('b')
  t.strictSame(h.started, ['a', 'b', 'c'])
  await h.finish('c')
  await h.finish('d')
  const settled = await done
  t.strictSame(settled.filter((s) => s !== undefined).map((s) => s.epoch).sort(), [0, 0, 1, 2])
  t.strictSame(h.log.filter((l) => l.startsWith('epoch')), [
    'epoch 0 started (2)', 'epoch 0 settled', 'epoch 1 started (1)', 'epoch 1 settled', 'epoch 2 started (1)', 'epoch 2 settled'
  ])
})

t.test('a keyed uncertain write blocks only later writes with its key', async (t) => {
  const calls = makeCalls({
    w1: { key: 'k1' },
    w2: { key: 'k1' },
    r3: { read: true, key: 'k1' },
    w4: { key: 'k2' },
    w5: {},
    w6: { key: 'k1' }
  })
  const h = harness({ maxConcurrent: 1 })
  const done = h.runner.run([[calls.w1!, calls.w2!, calls.r3!, calls.w4!, calls.w5!], [calls.w6!]], h.dispatch)
  await flush()
  await h.finish('w1', { uncertain: true })
  t.strictSame([...h.running], ['r3'], 'w2 is blocked at once; the read with the key runs')
  await h.finish('r3')
  await h.finish('w4')
  await h.finish('w5')
  const settled = await done
  t.strictSame(kinds(settled, calls), { w1: 'ran', w2: 'blocked by w1', r3: 'ran', w4: 'ran', w5: 'ran', w6: 'blocked by w1' },
    'later epochs too; other keys and unkeyed writes run')
  t.notOk(h.started.includes('w2') || h.started.includes('w6'), 'blocked writes are never dispatched')
})

t.test('an unkeyed uncertain write blocks every later write but no read', async (t) => {
  const calls = makeCalls({
    w1: {},
    w2: { key: 'k1' },
    r3: { read: true },
    w4: {},
    r5: { read: true, key: 'k1' },
    w6: { execution: 'parallel' }
  })
  const h = harness({ maxConcurrent: 1 })
  const done = h.runner.run([[calls.w1!], [calls.w2!, calls.r3!, calls.w4!, calls.r5!], [calls.w6!]], h.dispatch)
  await flush()
  await h.finish('w1', { uncertain: true })
  await h.finish('r3')
  await h.finish('r5')
  const settled = await done
  t.strictSame(kinds(settled, calls), { w1: 'ran', w2: 'blocked by w1', r3: 'ran', w4: 'blocked by w1', r5: 'ran', w6: 'blocked by w1' })
  t.strictSame(h.started, ['w1', 'r3', 'r5'])
})

t.test('an uncertain read blocks nothing', async (t) => {
  const calls = makeCalls({ r1: { read: true }, w2: {} })
  const h = harness({ maxConcurrent: 1 })
  const done = h.runner.run([Object.values(calls)], h.dispatch)
  await flush()
  await h.finish('r1', { uncertain: true })
  await h.finish('w2')
  t.strictSame(kinds(await done, calls), { r1: 'ran', w2: 'ran' })
})

t.test('blockedBy names the earliest uncertain write before the blocked one', async (t) => {
  const calls = makeCalls({ w0: { key: 'k' }, w1: {}, w2: { key: 'k' } })
  const h = harness({ maxConcurrent: 2 })
  const done = h.runner.run([Object.values(calls)], h.dispatch)
  await flush()
  t.strictSame([...h.running], ['w0', 'w1'])
  // The later one in source order becomes uncertain first.
  await h.finish('w1', { uncertain: true })
  t.strictSame([...h.running], ['w0'], 'w2 waits for its key')
  await h.finish('w0', { uncertain: true })
  t.strictSame(kinds(await done, calls), { w0: 'ran', w1: 'ran', w2: 'blocked by w0' })
})

t.test('a write earlier in source order than the uncertain one is not blocked', async (t) => {
  const calls = makeCalls({ w0: { key: 'k' }, w1: { key: 'k' }, w2: {} })
  const h = harness({ maxConcurrent: 2 })
  const done = h.runner.run([Object.values(calls)], h.dispatch)
  await flush()
  t.strictSame([...h.running], ['w0', 'w2'], 'w1 waits for its key')
  await h.finish('w2', { uncertain: true })
  await h.finish('w0')
  t.strictSame([...h.running], ['w1'], 'w1 comes before w2 in source order, so w2 does not block it')
  await h.finish('w1')
  t.strictSame(kinds(await done, calls), { w0: 'ran', w1: 'ran', w2: 'ran' })
})

t.test('a write already running when another becomes uncertain settles normally', async (t) => {
  const calls = makeCalls({ w0: {}, w1: {} })
  const h = harness({ maxConcurrent: 2 })
  const done = h.runner.run([Object.values(calls)], h.dispatch)
  await flush()
  await h.finish('w0', { uncertain: true })
  await h.finish('w1')
  t.strictSame(kinds(await done, calls), { w0: 'ran', w1: 'ran' })
})

// The engine stops its batches with a StopSwitch; anything shaped like an AbortSignal works.
const stoppers = {
  AbortController: () => { const c = new AbortController(); return { signal: c.signal, abort: (r: string) => c.abort(r) } },
  StopSwitch: () => { const s = new StopSwitch(); return { signal: s, abort: (r: string) => s.abort(r) } }
}

for (const [kind, make] of Object.entries(stoppers)) t.test(`cancellation (${kind}) mid-epoch lets running calls settle and starts nothing else, in this epoch or later`, async (t) => {
  const calls = makeCalls({ a: { read: true }, b: { read: true }, c: { read: true }, d: { read: true }, e: {}, f: { read: true } })
  const controller = make()
  const h = harness({ maxConcurrent: 2, signal: controller.signal })
  const done = h.runner.run([[calls.a!, calls.b!, calls.c!, calls.d!], [calls.e!], [calls.f!]], h.dispatch)
  await flush()
  controller.abort('cancelled')
  await flush()
  t.ok(h.runner.stopped)
  t.strictSame([...h.running], ['a', 'b'], 'running calls are not aborted')
  await h.finish('a')
  t.strictSame([...h.running], ['b'], 'the freed slot stays empty')
  await h.finish('b')
  const settled = await done
  t.strictSame(kinds(settled, calls), { a: 'ran', b: 'ran', c: 'cancelled', d: 'cancelled', e: 'cancelled', f: 'cancelled' })
  t.strictSame(h.started, ['a', 'b'])
  t.strictSame([settled[calls.e!.index]!.epoch, settled[calls.f!.index]!.epoch], [1, 2], 'cancelled calls keep their epoch')
  t.notOk(h.log.includes('epoch 1 started (1)'), 'no later epoch starts')
  t.strictSame([...h.settledCount.values()], [1, 1, 1, 1, 1, 1], 'every call settles once through the hook')
})

t.test('cancellation while no call runs (between epochs or before the start) starts nothing', async (t) => {
  const calls = makeCalls({ a: {}, b: {} })
  const controller = new AbortController()
  controller.abort('timeout')
  const h = harness({ signal: controller.signal })
  const settled = await h.runner.run([[calls.a!], [calls.b!]], h.dispatch)
  t.strictSame(kinds(settled, calls), { a: 'cancelled', b: 'cancelled' })
  t.strictSame(h.started, [])
  t.strictSame(h.log, ['a cancelled in 0', 'b cancelled in 1'], 'no epoch starts; each call still settles through the hook')
})

t.test('a dispatch that closes the batch stops everything not yet started', async (t) => {
  const calls = makeCalls({ a: {}, b: { read: true }, c: { read: true }, d: {} })
  const h = harness({ maxConcurrent: 2 })
  const done = h.runner.run([[calls.a!, calls.b!, calls.c!], [calls.d!]], h.dispatch)
  await flush()
  await h.finish('a', { closeBatch: true })
  t.ok(h.runner.stopped)
  t.strictSame([...h.running], ['b'], 'c does not take the freed slot')
  await h.finish('b')
  t.strictSame(kinds(await done, calls), { a: 'ran', b: 'ran', c: 'cancelled', d: 'cancelled' })
})

t.test('a dispatch that throws or rejects still settles, through onDispatchError', async (t) => {
  const calls = makeCalls({ r: { read: true }, w: {}, w2: {} })
  const h = harness({ maxConcurrent: 2 })
  const dispatch = (call: SchedulableCall): Promise<DispatchOutcome<string>> => {
    if (call.id === 'r') throw new Error('sync boom')
    return h.dispatch(call)
  }
  const done = h.runner.run([[calls.r!, calls.w!], [calls.w2!]], dispatch)
  await flush()
  await h.fail('w', new Error('async boom'))
  const settled = await done
  const value = (id: string): unknown => { const s = settled[calls[id]!.index]; return s?.kind === 'ran' ? s.value : s?.kind }
  t.equal(value('r'), 'threw:sync boom')
  t.equal(value('w'), 'threw:async boom')
  t.equal(value('w2'), 'blocked', 'a write that threw is uncertain (onDispatchError says so) and blocks later writes')
})

t.test('hooks fire in the real order things happen', async (t) => {
  const calls = makeCalls({ a: { read: true }, b: { read: true }, c: {}, d: {} })
  const h = harness({ maxConcurrent: 2 })
  const done = h.runner.run([[calls.a!, calls.b!], [calls.c!], [calls.d!]], h.dispatch)
  await flush()
  await h.finish('b')
  await h.finish('a')
  await h.finish('c', { uncertain: true })
  await done
  t.strictSame(h.log, [
    'epoch 0 started (2)',
    'a started in 0',
    'b started in 0',
    'b ran in 0',
    'a ran in 0',
    'epoch 0 settled',
    'epoch 1 started (1)',
    'c started in 1',
    'c ran in 1',
    'epoch 1 settled',
    'epoch 2 started (1)',
    'd blocked by c in 2',
    'epoch 2 settled'
  ])
})

t.test('a ran settlement carries its epoch, value and timing', async (t) => {
  const calls = makeCalls({ a: {} })
  const h = harness()
  const done = h.runner.run([[calls.a!]], h.dispatch)
  await flush()
  await h.finish('a', { value: 'v' })
  const s = (await done)[0]!
  t.equal(s.kind, 'ran')
  if (s.kind !== 'ran') return
  t.equal(s.value, 'v')
  t.equal(s.epoch, 0)
  t.ok(s.durationMs >= 0)
  t.ok(Number.isFinite(s.startedAt))
})

t.test('a hook that throws stops the batch without losing track of running calls, then run rejects', async (t) => {
  const calls = makeCalls({ a: { read: true }, b: { read: true }, c: { read: true }, d: {} })
  const h = harness({
    maxConcurrent: 2,
    hooks: { callSettled: (c) => { if (c.id === 'a') throw new Error('observer bug') } }
  })
  // Caught at once: the rejection comes while the test is still settling calls.
  const done = h.runner.run([[calls.a!, calls.b!, calls.c!], [calls.d!]], h.dispatch).then(() => null, (err: unknown) => err)
  await flush()
  await h.finish('a')
  t.strictSame([...h.running], ['b'], 'nothing new starts')
  t.equal(await Promise.race([done, flush().then(() => 'pending')]), 'pending', 'run waits for the running call')
  await h.finish('b')
  t.match(await done, { message: 'observer bug' })
  t.strictSame(h.started, ['a', 'b'])
})

t.test('an empty plan settles nothing and starts nothing', async (t) => {
  const h = harness()
  t.equal((await h.runner.run([], h.dispatch)).length, 0)
  t.strictSame(h.log, [])
})

t.test('a stop switch past the time given to holdUntil starts nothing more, with no timer: the answer that comes back first starts no next call', async (t) => {
  const controller = new StopSwitch()
  controller.holdUntil(Date.now() + 60_000)
  const h = harness({ maxConcurrent: 1, signal: controller })
  const calls = makeCalls({ a: {}, b: {}, c: { read: true } })
  const done = h.runner.run([[calls.a!], [calls.b!], [calls.c!]], h.dispatch)
  await flush()
  t.strictSame(h.started, ['a'])
  t.equal(controller.aborted, false, 'held while the time has not passed')
  // As a process paused past its lease finds on waking: the time has passed, and no timer has run.
  controller.holdUntil(Date.now() - 1)
  await h.finish('a')
  const settled = await done
  t.strictSame(h.started, ['a'], 'nothing started after the time passed')
  t.strictSame(kinds(settled, calls), { a: 'ran', b: 'cancelled', c: 'cancelled' })
  t.equal(controller.reason, 'lease_lost')
})

t.test('a call that started after its epoch says why it waited: the call holding its key, or a slot', async (t) => {
  const calls = makeCalls({ a: { read: true, key: 'k' }, b: { read: true }, c: { read: true, key: 'k' }, d: { read: true }, e: { read: true } })
  const h = harness({ maxConcurrent: 3 })
  const done = h.runner.run([Object.values(calls)], h.dispatch)
  await flush()
  t.strictSame([...h.running], ['a', 'b', 'd'], 'c waits for a\'s key, e for a slot')
  await h.finish('a')
  t.ok(h.running.has('c'), 'c starts once a frees the key')
  await h.finish('b')
  t.ok(h.running.has('e'), 'e starts once b frees a slot')
  for (const id of ['c', 'd', 'e']) await h.finish(id)
  const settled = await done
  const waits = Object.fromEntries(Object.values(calls).map((c) => {
    const s = settled[c.index]
    return [c.id, s?.kind === 'ran' ? s.waited ?? null : 'not ran']
  }))
  t.strictSame(waits, { a: null, b: null, c: { for: 'conflict_key', callId: 'a' }, d: null, e: { for: 'slot' } })
})
