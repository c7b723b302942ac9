/**
 * A few worker threads for work that could hold the service's event loop
 * (SPEC section 19): the validation thread (src/tools/validation-thread.ts)
 * and the projection workers (src/receipts/projection-pool.ts) are each one.
 *
 * - A worker starts when work needs it, up to `size`, with heap and stack
 *   limits of its own; idle, it never keeps the process alive.
 * - Work waiting for a worker takes turns by owner (a tenant, a tool
 *   server: FairQueue), each owner's in the order it came.
 * - Each job has a deadline on the service's clock, from the moment the
 *   worker says it began: a worker still busy then is terminated and
 *   replaced, and only that job fails. Before it begins, a job is bounded by
 *   `startDeadlineMs` (the worker loading, a schema compiling).
 * - A worker that dies (its heap limit, a crash) fails only its job; one
 *   that dies before it was ever ready fails what waits (`unavailable`)
 *   rather than being started again without end.
 * - close() terminates the workers and fails what they hold and what waits.
 *
 * The worker's side: it posts `{ ready: true }` once loaded; for each
 * request (which carries `id`) it posts `{ id, started: true }` when the
 * work proper begins, then `{ id, done }`, or `{ id, again: true }` when it
 * lacks what an earlier request left it (the job is then sent once more,
 * before any other, with `fresh` memory: see WorkerKind).
 */
import { type ResourceLimits, Worker } from 'node:worker_threads'
import { FairQueue } from './fair-queue.js'

/** What a pool's worker posts. */
export type WorkerReply<V> = { ready: true } | { id: number, started: true } | { id: number, done: V } | { id: number, again: true }

/** Why a job failed without an answer of its worker. */
export type JobFailure = 'deadline' | 'out_of_memory' | 'worker_exited' | 'worker_unavailable' | 'closed' | 'uncloneable'

/** A job that failed without an answer: `reason`, and for `uncloneable` the error postMessage threw. */
export class WorkerJobError extends Error {
  constructor (readonly reason: JobFailure, override readonly cause?: unknown) {
    super(`worker job failed: ${reason}`)
    this.name = 'WorkerJobError'
  }
}

/** What one kind of work tells its pool. `M` is what a worker remembers between jobs, as its pool sees it. */
export interface WorkerKind<J, M> {
  /** What a new worker remembers: nothing yet. */
  fresh: () => M
  /** The message of request `id` for `job`, to a worker that remembers `memory` (which this may note what it sends into). */
  request: (job: J, id: number, memory: M) => object
  /** How long the job may run once its worker began it, in milliseconds. */
  deadlineMs: (job: J) => number
}

export interface WorkerPoolOptions {
  /** The worker's module. */
  url: URL
  /** Workers at most. */
  size: number
  resourceLimits: ResourceLimits
  /** How long a job may wait for its worker to begin it, once sent. */
  startDeadlineMs: number
  /** The worker's node options (default: the process's own). */
  execArgv?: string[]
  /** What each worker is started with (`workerData`). */
  workerData?: unknown
}

interface Pending<J, V> {
  job: J
  owner: string
  resolve: (value: V) => void
  reject: (err: WorkerJobError) => void
}

interface Slot<J, V, M> {
  worker: Worker
  memory: M
  /** Loaded and listening: only then is it given a job. */
  ready: boolean
  job: Pending<J, V> | null
  jobId: number
  deadline: NodeJS.Timeout | undefined
  /** Told by the worker's 'error' event before it exits. */
  error: unknown
  /** Stopped or exited: nothing it says counts any more. */
  gone: boolean
}

export class WorkerPool<J, V, M> {
  readonly #kind: WorkerKind<J, M>
  readonly #opts: WorkerPoolOptions
  readonly #slots: Array<Slot<J, V, M>> = []
  readonly #waiting = new FairQueue<Pending<J, V>>()
  #nextId = 0
  #closed = false

  constructor (kind: WorkerKind<J, M>, opts: WorkerPoolOptions) {
    this.#kind = kind
    this.#opts = opts
  }

  /** Runs `job` on a worker, in `owner`'s turn; rejects with a WorkerJobError when it fails without an answer. */
  run (owner: string, job: J): Promise<V> {
    if (this.#closed) return Promise.reject(new WorkerJobError('closed'))
    return new Promise<V>((resolve, reject) => {
      this.#waiting.push(owner, { job, owner, resolve, reject })
      this.#pump()
    })
  }

  /** Terminates the workers; jobs in flight or waiting fail (`closed`). */
  async close (): Promise<void> {
    this.#closed = true
    const slots = this.#slots.splice(0)
    for (const slot of slots) this.#retire(slot, 'closed')
    for (const pending of this.#waiting.drain()) pending.reject(new WorkerJobError('closed'))
    await Promise.all(slots.map(async (slot) => await slot.worker.terminate()))
  }

  /** Hands waiting jobs to idle workers, and starts workers for the rest, up to the pool's size. */
  #pump (): void {
    while (this.#waiting.size > 0) {
      const idle = this.#slots.find((s) => s.ready && s.job === null)
      if (idle === undefined) break
      this.#assign(idle, this.#waiting.shift()!)
    }
    const starting = this.#slots.filter((s) => !s.ready).length
    for (let n = starting; n < this.#waiting.size && this.#slots.length < this.#opts.size; n++) this.#start()
  }

  #start (): void {
    let worker: Worker
    try {
      const { url, resourceLimits, execArgv, workerData } = this.#opts
      worker = new Worker(url, { resourceLimits, workerData, ...(execArgv === undefined ? {} : { execArgv }) })
    } catch {
      for (const pending of this.#waiting.drain()) pending.reject(new WorkerJobError('worker_unavailable'))
      return
    }
    const slot: Slot<J, V, M> = { worker, memory: this.#kind.fresh(), ready: false, job: null, jobId: 0, deadline: undefined, error: undefined, gone: false }
    worker.on('message', (reply: WorkerReply<V>) => { this.#answered(slot, reply) })
    worker.on('error', (err) => { slot.error = err })
    worker.on('exit', () => { this.#exited(slot) })
    // Held (as a new Worker is) while it starts, for the job it was started for; once ready and idle, it is let go.
    this.#slots.push(slot)
  }

  #assign (slot: Slot<J, V, M>, pending: Pending<J, V>): void {
    const id = ++this.#nextId
    try {
      slot.worker.postMessage(this.#kind.request(pending.job, id, slot.memory))
    } catch (err) {
      // What cannot be cloned (a function, a symbol) was not sent: the worker stays idle.
      pending.reject(new WorkerJobError('uncloneable', err))
      return
    }
    slot.job = pending
    slot.jobId = id
    // Held while it works, so a caller awaiting it keeps the process alive.
    slot.worker.ref()
    slot.deadline = setTimeout(() => { this.#stop(slot) }, this.#opts.startDeadlineMs)
  }

  #answered (slot: Slot<J, V, M>, reply: WorkerReply<V>): void {
    if (slot.gone) return
    if ('ready' in reply) {
      slot.ready = true
      this.#pump()
      if (slot.job === null) slot.worker.unref()
      return
    }
    const pending = slot.job
    if (pending === null || reply.id !== slot.jobId) return
    if ('started' in reply) {
      clearTimeout(slot.deadline)
      slot.deadline = setTimeout(() => { this.#stop(slot) }, this.#kind.deadlineMs(pending.job))
      return
    }
    this.#release(slot)
    if ('again' in reply) {
      // The worker lacks what it was thought to remember: it is sent the job afresh, before any other.
      slot.memory = this.#kind.fresh()
      this.#waiting.putBack(pending.owner, pending)
    } else {
      pending.resolve(reply.done)
    }
    this.#pump()
  }

  /** The deadline: the worker is still at it, so it is terminated, and another takes its place when needed. */
  #stop (slot: Slot<J, V, M>): void {
    if (slot.gone) return
    this.#remove(slot)
    this.#retire(slot, 'deadline')
    void slot.worker.terminate()
    this.#pump()
  }

  /** A worker that exited on its own: its heap limit, or a crash. */
  #exited (slot: Slot<J, V, M>): void {
    if (slot.gone) return
    this.#remove(slot)
    const outOfMemory = (slot.error as { code?: unknown } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY'
    this.#retire(slot, outOfMemory ? 'out_of_memory' : 'worker_exited')
    // One that never got ready would not start the next time either: what waits fails now rather than retrying without end.
    if (!slot.ready) for (const pending of this.#waiting.drain()) pending.reject(new WorkerJobError('worker_unavailable'))
    this.#pump()
  }

  #remove (slot: Slot<J, V, M>): void {
    const i = this.#slots.indexOf(slot)
    if (i >= 0) this.#slots.splice(i, 1)
  }

  /** Marks the worker gone and fails its job, if it had one. */
  #retire (slot: Slot<J, V, M>, reason: JobFailure): void {
    slot.gone = true
    const pending = slot.job
    this.#release(slot)
    pending?.reject(new WorkerJobError(reason))
  }

  #release (slot: Slot<J, V, M>): void {
    clearTimeout(slot.deadline)
    slot.deadline = undefined
    slot.job = null
    if (!slot.gone) slot.worker.unref()
  }
}

/** The module loaders the process runs with (the test loader's `--import`), which a worker needs to load TypeScript; no other option of the process. */
export function loaderArgs (execArgv: readonly string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!
    if (/^--(import|loader|experimental-loader)=/.test(arg)) out.push(arg)
    else if (/^--(import|loader|experimental-loader)$/.test(arg) && i + 1 < execArgv.length) out.push(arg, execArgv[++i]!)
  }
  return out
}

/**
 * A worker module beside `importMeta`'s: its `.js` once built, and the
 * `.ts` itself where the tests run the sources through test/loader, whose
 * hooks find a `.ts` for a `.js` only when a module imports it, not for a
 * worker's entry point.
 */
export function workerModule (importMetaUrl: string, name: string): URL {
  return new URL(importMetaUrl.endsWith('.ts') ? `./${name}.ts` : `./${name}.js`, importMetaUrl)
}
