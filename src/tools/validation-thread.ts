/**
 * The validation thread (SPEC section 19): validations that could hold the
 * event loop (boundedValidator sends them) run one at a time on a worker
 * thread, each with a deadline. A validation still running at its deadline
 * is stopped with its thread (worker.terminate()), answers over budget, and
 * the next one starts a new thread. The thread starts with the first such
 * validation, does not keep the process alive (unref), and ends on close.
 *
 * The validations waiting are taken owner by owner (a FairQueue; an owner
 * is the tenant whose arguments they are, or the tool server whose answer),
 * so a tenant that sends costly calls by the hundred waits behind its own,
 * and another tenant's call waits for at most one of each other owner's.
 */
import { Worker } from 'node:worker_threads'
import { FairQueue } from '../schedule/fair-queue.js'
import { overBudget, type Validation, type ValidationRunner } from './bounded-validate.js'

/** Under the test loader this module is TypeScript, and so is the worker beside it. */
const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? './validation-worker.ts' : './validation-worker.js', import.meta.url)

/**
 * A validation is stopped at twice its budget on the wall clock: the thread
 * refuses one over the budget on both the wall and the CPU clocks when it
 * ends, and the time between lets one that waited for a CPU finish.
 */
const DEADLINE_FACTOR = 2
/** Starting the thread, loading the compiler and compiling the schema: long enough for a loaded machine, not for ever. */
const START_DEADLINE_MS = 10_000
/** The thread's heap and stack: validating arguments of at most TOOLGATE_MAX_ARGUMENT_BYTES needs far less. */
const RESOURCE_LIMITS = Object.freeze({ maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 })

/** What the worker is asked: validate `data` with the schema `key` names (`schema` when the worker may not have it). */
export interface Request { id: number, key: number, schema?: unknown, data: unknown, maxMs: number }
/** What the worker answers: it began the validation (the deadline runs from there), it ended, or it has no such schema. */
export type Reply = { id: number, kind: 'started' } | { id: number, kind: 'done', verdict: Validation } | { id: number, kind: 'missing' }

interface Job { key: number, schema: unknown, data: unknown, maxMs: number, owner: string, resolve: (verdict: Validation) => void }

export class ValidationThread implements ValidationRunner {
  #worker: Worker | null = null
  /** Schema keys the current worker has been sent. */
  #known = new Set<number>()
  readonly #queue = new FairQueue<Job>()
  #current: { job: Job, id: number, timer: NodeJS.Timeout } | null = null
  #nextId = 0
  #closed = false

  validate (key: number, schema: unknown, data: unknown, maxMs: number, owner = ''): Promise<Validation> {
    if (this.#closed) return Promise.resolve(overBudget(maxMs))
    return new Promise((resolve) => {
      this.#queue.push(owner, { key, schema, data, maxMs, owner, resolve })
      if (this.#current === null) this.#next()
    })
  }

  /** Ends the thread; validations still waiting answer over budget. */
  async close (): Promise<void> {
    this.#closed = true
    const waiting = this.#queue.drain()
    if (this.#current !== null) waiting.unshift(this.#current.job)
    this.#finish()
    for (const job of waiting) job.resolve(overBudget(job.maxMs))
    const worker = this.#worker
    this.#worker = null
    if (worker !== null) await worker.terminate()
  }

  #next (): void {
    const job = this.#queue.shift()
    if (job === undefined) return
    const id = this.#nextId++
    const worker = this.#thread()
    const timer = setTimeout(() => { this.#stop(id) }, START_DEADLINE_MS).unref()
    this.#current = { job, id, timer }
    const request: Request = { id, key: job.key, data: job.data, maxMs: job.maxMs }
    if (!this.#known.has(job.key)) request.schema = job.schema
    this.#known.add(job.key)
    try {
      worker.postMessage(request)
    } catch {
      // Data that cannot be cloned (not JSON's) cannot be validated there either.
      this.#settle(id, overBudget(job.maxMs))
    }
  }

  #thread (): Worker {
    if (this.#worker !== null) return this.#worker
    const worker = new Worker(WORKER_URL, { execArgv: loaderArgs(process.execArgv), resourceLimits: RESOURCE_LIMITS })
    worker.unref()
    worker.on('message', (reply: Reply) => { this.#reply(worker, reply) })
    // Out of memory, or any failure of the thread: the validation it held is refused, and the next starts another thread.
    worker.on('error', () => { this.#lost(worker) })
    worker.on('exit', () => { this.#lost(worker) })
    this.#worker = worker
    this.#known = new Set()
    return worker
  }

  #reply (worker: Worker, reply: Reply): void {
    const current = this.#current
    if (worker !== this.#worker || current === null || current.id !== reply.id) return
    if (reply.kind === 'started') {
      clearTimeout(current.timer)
      current.timer = setTimeout(() => { this.#stop(reply.id) }, current.job.maxMs * DEADLINE_FACTOR).unref()
    } else if (reply.kind === 'missing') {
      this.#known.delete(current.job.key)
      clearTimeout(current.timer)
      this.#current = null
      this.#queue.putBack(current.job.owner, current.job)
      this.#next()
    } else {
      this.#settle(reply.id, reply.verdict)
    }
  }

  /** The deadline: the thread is stopped and the validation refused. */
  #stop (id: number): void {
    if (this.#current?.id !== id) return
    const worker = this.#worker
    this.#worker = null
    if (worker !== null) void worker.terminate()
    this.#settle(id, overBudget(this.#current.job.maxMs))
  }

  #lost (worker: Worker): void {
    if (worker !== this.#worker) return
    this.#worker = null
    if (this.#current !== null) this.#settle(this.#current.id, overBudget(this.#current.job.maxMs))
  }

  #settle (id: number, verdict: Validation): void {
    const current = this.#current
    if (current === null || current.id !== id) return
    this.#finish()
    current.job.resolve(verdict)
    if (!this.#closed) this.#next()
  }

  #finish (): void {
    if (this.#current !== null) clearTimeout(this.#current.timer)
    this.#current = null
  }
}

/** The module loaders the process runs with (the test loader's `--import`), which the worker needs to load TypeScript; no other option of the process. */
export function loaderArgs (execArgv: readonly string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!
    if (/^--(import|loader|experimental-loader)=/.test(arg)) out.push(arg)
    else if (/^--(import|loader|experimental-loader)$/.test(arg) && i + 1 < execArgv.length) out.push(arg, execArgv[++i]!)
  }
  return out
}

