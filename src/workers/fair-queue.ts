/**
 * Jobs of many owners (tenants) waiting for a shared resource (a worker
 * thread), taken in turn: each owner's jobs in the order they came, and the
 * owners round-robin, an owner new to the queue (or back after its line
 * emptied) joining the rotation last. One owner's backlog never stands in
 * front of another owner's job: that job waits for at most one job of each
 * other owner per turn its own owner's line needs to reach it, however many
 * each has queued (SPEC section 19: no tenant can hurt the others).
 *
 * Plain in-process bookkeeping, each step O(1) but `putBack`.
 */
export class FairQueue<T> {
  /** Each owner with jobs waiting, and its jobs in order; the Map's order is the rotation. */
  readonly #byOwner = new Map<string, T[]>()
  #size = 0

  /** Jobs waiting, of every owner. */
  get size (): number {
    return this.#size
  }

  /** Queues `job` behind `owner`'s earlier jobs; an owner new to the queue joins the rotation last. */
  push (owner: string, job: T): void {
    const jobs = this.#byOwner.get(owner)
    if (jobs === undefined) this.#byOwner.set(owner, [job])
    else jobs.push(job)
    this.#size++
  }

  /** The next job: the first owner's first; that owner goes to the back of the rotation. */
  shift (): T | undefined {
    for (const [owner, jobs] of this.#byOwner) {
      const job = jobs.shift()!
      this.#byOwner.delete(owner)
      if (jobs.length > 0) this.#byOwner.set(owner, jobs)
      this.#size--
      return job
    }
    return undefined
  }

  /** Puts a job that was taken and could not run yet back in front of every other job (its owner first in the rotation). */
  putBack (owner: string, job: T): void {
    const rest = [...this.#byOwner]
    this.#byOwner.clear()
    this.#byOwner.set(owner, [job, ...(rest.find(([o]) => o === owner)?.[1] ?? [])])
    for (const [o, jobs] of rest) if (o !== owner) this.#byOwner.set(o, jobs)
    this.#size++
  }

  /** Takes every job out, owner by owner in the rotation's order. */
  drain (): T[] {
    const all: T[] = []
    for (const jobs of this.#byOwner.values()) all.push(...jobs)
    this.#byOwner.clear()
    this.#size = 0
    return all
  }
}
