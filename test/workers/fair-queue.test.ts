/**
 * The fair queue (src/workers/fair-queue.ts): each owner's jobs in order,
 * owners in turn, so no owner's backlog stands in front of another's job.
 */
import t from 'tap'
import { FairQueue } from '../../src/workers/fair-queue.js'

const takeAll = <T>(q: FairQueue<T>): T[] => {
  const out: T[] = []
  for (let job = q.shift(); job !== undefined; job = q.shift()) out.push(job)
  return out
}

t.test('owners take turns, each owner\'s jobs in the order they came', async (t) => {
  const q = new FairQueue<string>()
  for (let i = 1; i <= 4; i++) q.push('a', `a${i}`)
  q.push('b', 'b1')
  q.push('c', 'c1')
  q.push('b', 'b2')
  t.equal(q.size, 7)
  t.same(takeAll(q), ['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4'])
  t.equal(q.size, 0)
  t.equal(q.shift(), undefined, 'empty')
})

t.test('an owner that comes back after its line emptied joins the rotation last', async (t) => {
  const q = new FairQueue<string>()
  q.push('a', 'a1')
  q.push('b', 'b1')
  t.equal(q.shift(), 'a1')
  q.push('a', 'a2')
  q.push('c', 'c1')
  t.same(takeAll(q), ['b1', 'a2', 'c1'])
})

t.test('a job put back comes out first, ahead of its owner\'s later jobs and of every other owner', async (t) => {
  const q = new FairQueue<string>()
  q.push('a', 'a1')
  q.push('a', 'a2')
  q.push('b', 'b1')
  const taken = q.shift()!
  t.equal(taken, 'a1')
  q.putBack('a', taken)
  t.equal(q.size, 3)
  t.same(takeAll(q), ['a1', 'b1', 'a2'])
  q.push('b', 'b2')
  q.putBack('c', 'c0')
  t.same(takeAll(q), ['c0', 'b2'], 'an owner with nothing waiting is put first too')
})

t.test('drain takes every job out and leaves the queue empty', async (t) => {
  const q = new FairQueue<number>()
  q.push('a', 1)
  q.push('b', 2)
  q.push('a', 3)
  t.same(q.drain().sort(), [1, 2, 3])
  t.equal(q.size, 0)
  t.equal(q.shift(), undefined)
})

t.test('random pushes and takes: no job is lost or repeated, each owner keeps its order, and a waiting job is passed by at most one job of each other owner per turn', async (t) => {
  let seed = 7
  const random = (): number => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31 }
  for (let round = 0; round < 50; round++) {
    const q = new FairQueue<{ owner: string, n: number }>()
    const pushed = new Map<string, number>()
    const taken: Array<{ owner: string, n: number }> = []
    /** For each job waiting: its place in its owner's line when it was pushed, and the jobs of each other owner taken since. */
    const waitingJobs = new Map<string, { owner: string, place: number, passed: Map<string, number> }>()
    let failures = 0
    for (let step = 0; step < 300; step++) {
      if (random() < 0.6) {
        const owner = `o${Math.floor(random() * 5)}`
        const n = (pushed.get(owner) ?? 0) + 1
        pushed.set(owner, n)
        q.push(owner, { owner, n })
        const place = n - taken.filter((j) => j.owner === owner).length
        waitingJobs.set(`${owner}:${n}`, { owner, place, passed: new Map() })
      } else {
        const job = q.shift()
        if (job === undefined) continue
        taken.push(job)
        waitingJobs.delete(`${job.owner}:${job.n}`)
        for (const [key, w] of waitingJobs) {
          if (w.owner === job.owner) continue
          const count = (w.passed.get(job.owner) ?? 0) + 1
          w.passed.set(job.owner, count)
          // Its owner needs `place` turns to reach it, and another owner takes at most one job before each.
          if (count > w.place && failures++ === 0) t.fail(`${job.owner}:${job.n} passed ${key} ${count} times, which was pushed at place ${w.place}`)
        }
      }
    }
    taken.push(...takeAll(q))
    const byOwner = new Map<string, number[]>()
    for (const job of taken) byOwner.set(job.owner, [...(byOwner.get(job.owner) ?? []), job.n])
    for (const [owner, ns] of byOwner) t.same(ns, Array.from({ length: pushed.get(owner)! }, (_, i) => i + 1), `${owner}: every job once, in order`)
  }
  t.end()
})
