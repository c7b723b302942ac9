/**
 * Where projections are evaluated: a few worker threads, apart from the
 * service's event loop, each with a heap limit of its own. jsonata checks
 * its time box only between evaluation steps, and some built-ins (`$sort`,
 * `$distinct`) are quadratic within one step and never yield, so in the
 * service's thread one projection on a large receipt could hold every
 * request for seconds and exhaust the process's heap. Here the time box is
 * a timer of the service's thread: a worker still busy at its deadline is
 * terminated and replaced, and one that passes its heap limit dies alone.
 * Either way the projection fails; the service never waits on it.
 */
import { Worker } from 'node:worker_threads'
import { FairQueue } from '../schedule/fair-queue.js'
import { type ProjectionLimits, describeJsonataError } from './projection-expression.js'
import type { ProjectionCheck } from '../model/tool.js'
import type { ProjectionReply, ProjectionRequest } from './projection-worker.js'

/** Options of {@link ProjectionPool}. */
export interface ProjectionPoolOptions {
  /**
   * Worker threads at most; each starts when a projection first needs it.
   * @default 2
   */
  size?: number
  /**
   * Each worker's old-generation heap, in MiB. A process started with
   * `--max-old-space-size` gives its workers that size instead: V8's flags
   * apply to every thread, over a worker's own limits.
   * @default 64
   */
  maxOldGenerationSizeMb?: number
  /**
   * Each worker's young generation, in MiB. A process started with
   * `--max-semi-space-size` (as `npm start` and the image are) gives its
   * workers three times that instead.
   * @default 16
   */
  maxYoungGenerationSizeMb?: number
  /**
   * Each worker's stack, in MiB.
   * @default 4
   */
  stackSizeMb?: number
  /**
   * How long past an evaluation's time box its worker is stopped, in
   * milliseconds. jsonata's own check stops a runaway between steps at the
   * time box itself and keeps the worker; this deadline is for a step that
   * never ends.
   * @default 100
   */
  graceMs?: number
}

/** A projection to evaluate; its `input` is structured-cloned to the worker. */
export interface ProjectionJob {
  source: string
  limits: ProjectionLimits
  input: unknown
  maxChars: number
}

const DEFAULTS: Required<ProjectionPoolOptions> = {
  size: 2,
  maxOldGenerationSizeMb: 64,
  maxYoungGenerationSizeMb: 16,
  stackSizeMb: 4,
  graceMs: 100
}

/**
 * The worker's module beside this one: `projection-worker.js` once built,
 * and the `.ts` itself where the tests run the sources through test/loader,
 * whose hooks find a `.ts` for a `.js` only when a module imports it, not
 * for a worker's entry point. A worker inherits the process's `--import`s
 * (its execArgv), the loader's among them.
 */
const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? './projection-worker.ts' : './projection-worker.js', import.meta.url)

/**
 * The code of jsonata's own time-box error: a projection stopped at its
 * deadline fails as one that jsonata stopped, whichever came first.
 */
const TIMED_OUT = 'D1012'

interface Pending extends ProjectionJob {
  resolve: (check: ProjectionCheck) => void
  reject: (err: Error) => void
}

interface Slot {
  worker: Worker
  /** Loaded and listening: only then does a projection's time box start. */
  ready: boolean
  job: Pending | null
  jobId: number
  deadline: NodeJS.Timeout | undefined
  /** Told by the worker's 'error' event before it exits. */
  error: unknown
  /** Stopped or exited: nothing it says counts any more. */
  gone: boolean
}

function failure (reason: string): Error {
  return new Error(`Projection evaluation failed: ${reason}`)
}

/**
 * Evaluates projections on a small pool of worker threads, one projection
 * per worker at a time; the rest wait, each owner's (tenant's) in arrival
 * order and the owners in turn (a FairQueue), so one tenant's backlog of
 * costly projections never holds another tenant's. A projection's time
 * box starts when a worker takes it, not while it waits: each one ahead of
 * it is bounded by its own box, and a projection is never failed for the
 * work of another. Idle workers never keep the process alive, and
 * {@link close} terminates them.
 */
export class ProjectionPool {
  readonly #opts: Required<ProjectionPoolOptions>
  readonly #slots: Slot[] = []
  readonly #waiting = new FairQueue<Pending>()
  #nextId = 0
  #closed = false

  constructor (opts: ProjectionPoolOptions = {}) {
    this.#opts = { ...DEFAULTS, ...opts }
    for (const [name, value] of Object.entries(this.#opts)) {
      if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`Expected \`${name}\` to be a positive integer, got ${String(value)}`)
    }
  }

  /**
   * Evaluates the expression on the input and checks the value. Rejects with
   * `Projection evaluation failed: <reason>` when it throws, passes a limit,
   * runs past its deadline (`D1012`), its worker runs out of memory
   * (`out_of_memory`) or dies (`worker_exited`), no worker could start
   * (`worker_unavailable`), or the input cannot be copied to a worker
   * (`DataCloneError`). `owner` (a tenant) waits its turn among the owners
   * with projections waiting; projections without one share a turn.
   */
  async run (job: ProjectionJob, owner = ''): Promise<ProjectionCheck> {
    if (this.#closed) throw failure('closed')
    return await new Promise<ProjectionCheck>((resolve, reject) => {
      this.#waiting.push(owner, { ...job, resolve, reject })
      this.#pump()
    })
  }

  /** Terminates the workers; projections in flight or waiting fail (`closed`). */
  async close (): Promise<void> {
    this.#closed = true
    const slots = this.#slots.splice(0)
    for (const slot of slots) this.#retire(slot, 'closed')
    for (const job of this.#waiting.drain()) job.reject(failure('closed'))
    await Promise.all(slots.map(async (slot) => await slot.worker.terminate()))
  }

  /** Hands waiting projections to idle workers, and starts workers for the rest, up to the pool's size. */
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
    const { maxOldGenerationSizeMb, maxYoungGenerationSizeMb, stackSizeMb } = this.#opts
    let worker: Worker
    try {
      worker = new Worker(WORKER_URL, { resourceLimits: { maxOldGenerationSizeMb, maxYoungGenerationSizeMb, stackSizeMb } })
    } catch {
      for (const job of this.#waiting.drain()) job.reject(failure('worker_unavailable'))
      return
    }
    const slot: Slot = { worker, ready: false, job: null, jobId: 0, deadline: undefined, error: undefined, gone: false }
    worker.on('message', (reply: ProjectionReply) => { this.#answered(slot, reply) })
    worker.on('error', (err) => { slot.error = err })
    worker.on('exit', () => { this.#exited(slot) })
    this.#slots.push(slot)
  }

  #assign (slot: Slot, job: Pending): void {
    const id = ++this.#nextId
    const request: ProjectionRequest = { id, source: job.source, limits: job.limits, input: job.input, maxChars: job.maxChars }
    try {
      slot.worker.postMessage(request)
    } catch (err) {
      // The input cannot be cloned (a function, a symbol): nothing was sent, the worker stays idle.
      job.reject(failure(describeJsonataError(err, false)))
      return
    }
    slot.job = job
    slot.jobId = id
    // Held while it works, so a caller awaiting it keeps the process alive.
    slot.worker.ref()
    slot.deadline = setTimeout(() => { this.#stop(slot) }, job.limits.timeoutMs + this.#opts.graceMs)
  }

  #answered (slot: Slot, reply: ProjectionReply): void {
    if (slot.gone) return
    if ('ready' in reply) {
      slot.ready = true
      // Held while it starts, for the projection it was started for; idle, it is let go.
      this.#pump()
      if (slot.job === null) slot.worker.unref()
      return
    }
    if (slot.job !== null && reply.id === slot.jobId) {
      const job = slot.job
      this.#release(slot)
      if ('check' in reply) job.resolve(reply.check)
      else job.reject(failure(reply.failure))
    }
    this.#pump()
  }

  /** The deadline: the worker is still evaluating, so it is terminated, and another takes its place when needed. */
  #stop (slot: Slot): void {
    if (slot.gone) return
    this.#remove(slot)
    this.#retire(slot, TIMED_OUT)
    void slot.worker.terminate()
    this.#pump()
  }

  /** A worker that exited on its own: its heap limit, or a crash. */
  #exited (slot: Slot): void {
    if (slot.gone) return
    this.#remove(slot)
    const outOfMemory = (slot.error as { code?: unknown } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY'
    this.#retire(slot, outOfMemory ? 'out_of_memory' : 'worker_exited')
    // One that never got ready would not start the next time either: what waits fails now rather than retrying without end.
    if (!slot.ready) for (const job of this.#waiting.drain()) job.reject(failure('worker_unavailable'))
    this.#pump()
  }

  #remove (slot: Slot): void {
    const i = this.#slots.indexOf(slot)
    if (i >= 0) this.#slots.splice(i, 1)
  }

  /** Marks the worker gone and fails its projection, if it had one. */
  #retire (slot: Slot, reason: string): void {
    slot.gone = true
    const job = slot.job
    this.#release(slot)
    job?.reject(failure(reason))
  }

  #release (slot: Slot): void {
    clearTimeout(slot.deadline)
    slot.deadline = undefined
    slot.job = null
    if (!slot.gone) slot.worker.unref()
  }
}
