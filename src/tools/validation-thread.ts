/**
 * The validation thread (SPEC section 19): validations that could hold the
 * event loop (boundedValidator sends them) run one at a time on a worker
 * thread, each with a deadline. A validation still running at its deadline
 * is stopped with its thread (worker.terminate()), answers over budget, and
 * the next one starts a new thread. The thread starts with the first such
 * validation, does not keep the process alive (unref), and ends on close.
 */
import { Worker } from 'node:worker_threads'
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

/**
 * What the worker is asked: validate `data` with the schema `key` names
 * (`schema` when the worker may not have it); `fills`: answer the validated
 * value (defaults filled in), else leave it out of a valid verdict.
 */
export interface Request { id: number, key: number, schema?: unknown, data: unknown, maxMs: number, fills: boolean }
/** What the worker answers: it began the validation (the deadline runs from there), it ended, or it has no such schema. */
export type Reply = { id: number, kind: 'started' } | { id: number, kind: 'done', verdict: Validation } | { id: number, kind: 'missing' }

interface Job { key: number, schema: unknown, data: unknown, maxMs: number, fills: boolean, resolve: (verdict: Validation) => void }

export class ValidationThread implements ValidationRunner {
  #worker: Worker | null = null
  /** Schema keys the current worker has been sent. */
  #known = new Set<number>()
  readonly #queue: Job[] = []
  #current: { job: Job, id: number, timer: NodeJS.Timeout } | null = null
  #nextId = 0
  #closed = false

  validate (key: number, schema: unknown, data: unknown, maxMs: number, fills: boolean): Promise<Validation> {
    if (this.#closed) return Promise.resolve(overBudget(maxMs))
    return new Promise((resolve) => {
      this.#queue.push({ key, schema, data, maxMs, fills, resolve })
      if (this.#current === null) this.#next()
    })
  }

  /** Ends the thread; validations still waiting answer over budget. */
  async close (): Promise<void> {
    this.#closed = true
    const waiting = this.#queue.splice(0)
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
    const request: Request = { id, key: job.key, data: job.data, maxMs: job.maxMs, fills: job.fills }
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
      this.#queue.unshift(current.job)
      this.#next()
    } else {
      // A schema that fills nothing left the data as sent: the caller's own object, not the copy (none was sent back).
      this.#settle(reply.id, reply.verdict.valid && !current.job.fills ? { valid: true, value: current.job.data } : reply.verdict)
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

