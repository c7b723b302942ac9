/**
 * The worker pool (src/workers/pool.ts) with a scripted worker: answers,
 * deadlines, a worker that forgot what it was sent, one that dies, one
 * that never loads, work that cannot be copied, and closing.
 */
import t, { type Test } from 'tap'
import { WorkerJobError, WorkerPool } from '../../src/workers/pool.js'

interface Job { act: 'echo' | 'spin' | 'forgetful' | 'crash', value?: unknown }
interface Answer { value: unknown, full: boolean }

const WORKER = new URL('./scripted-worker.ts', import.meta.url)
let requests = 0

function pool (opts: { size?: number, broken?: boolean } = {}): WorkerPool<Job, Answer, { sent: boolean }> {
  return new WorkerPool<Job, Answer, { sent: boolean }>({
    fresh: () => ({ sent: false }),
    request: (job, id, memory) => {
      requests++
      // As the validation thread sends a schema: in full the first time a worker is sent anything.
      const full = !memory.sent
      memory.sent = true
      return { id, ...job, full }
    },
    deadlineMs: () => 200
  }, { url: WORKER, size: opts.size ?? 1, resourceLimits: { maxOldGenerationSizeMb: 64 }, startDeadlineMs: 10_000, workerData: { broken: opts.broken === true } })
}

const failsWith = async (t: Test, work: Promise<unknown>, reason: string): Promise<void> => {
  const err = await work.then(() => null, (e: unknown) => e)
  t.ok(err instanceof WorkerJobError, `a WorkerJobError: ${String(err)}`)
  t.equal((err as WorkerJobError).reason, reason)
}

t.test('a job is answered, and a worker remembers what it was sent', async (t) => {
  const p = pool()
  t.teardown(() => p.close())
  t.same(await p.run('a', { act: 'echo', value: 1 }), { value: 1, full: true })
  t.same(await p.run('a', { act: 'echo', value: 2 }), { value: 2, full: false })
})

t.test('a job past its deadline fails alone; its worker is replaced, and the new one starts with nothing remembered', async (t) => {
  const p = pool()
  t.teardown(() => p.close())
  await p.run('a', { act: 'echo' })
  const spinning = p.run('a', { act: 'spin' })
  const next = p.run('b', { act: 'echo', value: 'after' })
  await failsWith(t, spinning, 'deadline')
  t.same(await next, { value: 'after', full: true })
})

t.test('a worker that forgot what it was sent is sent the job again in full, before any other job', async (t) => {
  const p = pool()
  t.teardown(() => p.close())
  await p.run('a', { act: 'echo' })
  const order: string[] = []
  const forgetful = p.run('a', { act: 'forgetful', value: 'x' }).then((answer) => { order.push('forgetful'); return answer })
  const other = p.run('b', { act: 'echo', value: 'y' }).then((answer) => { order.push('other'); return answer })
  t.same(await forgetful, { value: 'x', full: true })
  t.same(await other, { value: 'y', full: false })
  t.same(order, ['forgetful', 'other'])
})

t.test('a worker that dies fails its job only', async (t) => {
  const p = pool()
  t.teardown(() => p.close())
  await failsWith(t, p.run('a', { act: 'crash' }), 'worker_exited')
  t.same(await p.run('a', { act: 'echo', value: 3 }), { value: 3, full: true })
})

t.test('a worker that never loads fails what waits, rather than being started again without end', async (t) => {
  const p = pool({ broken: true })
  t.teardown(() => p.close())
  await Promise.all([failsWith(t, p.run('a', { act: 'echo' }), 'worker_unavailable'), failsWith(t, p.run('b', { act: 'echo' }), 'worker_unavailable')])
})

t.test('work that cannot be copied to a worker fails alone, with the clone error', async (t) => {
  const p = pool()
  t.teardown(() => p.close())
  await p.run('a', { act: 'echo' })
  const err = await p.run('a', { act: 'echo', value: () => 1 }).then(() => null, (e: unknown) => e) as WorkerJobError
  t.equal(err.reason, 'uncloneable')
  t.match(String(err.cause), /could not be cloned/)
  t.same(await p.run('a', { act: 'echo', value: 4 }), { value: 4, full: false }, 'the worker is still there')
})

t.test('a pool of two runs two jobs at once', async (t) => {
  const p = pool({ size: 2 })
  t.teardown(() => p.close())
  const spins = [p.run('a', { act: 'spin' }), p.run('b', { act: 'spin' })]
  const started = performance.now()
  for (const spin of spins) await failsWith(t, spin, 'deadline')
  t.ok(performance.now() - started < 8_000, 'side by side, each stopped at its own deadline')
})

t.test('close fails the job in flight and the ones waiting, and refuses new ones', async (t) => {
  const p = pool()
  await p.run('a', { act: 'echo' })
  const inFlight = failsWith(t, p.run('a', { act: 'spin' }), 'closed')
  const waiting = failsWith(t, p.run('b', { act: 'echo' }), 'closed')
  await new Promise((resolve) => setTimeout(resolve, 50))
  await p.close()
  await inFlight
  await waiting
  await failsWith(t, p.run('a', { act: 'echo' }), 'closed')
  t.ok(requests > 0)
})
