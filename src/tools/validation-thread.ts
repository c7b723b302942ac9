/**
 * The validation thread (SPEC section 19): validations that could hold the
 * event loop (boundedValidator sends them) run one at a time on a worker
 * thread of a WorkerPool (src/workers/pool.ts), each with a deadline. A
 * validation still running at its deadline is stopped with its thread,
 * answers over budget, and the next one starts a new thread. The thread
 * starts with the first such validation, does not keep the process alive
 * when idle, and ends on close.
 *
 * The validations waiting are taken owner by owner (an owner is the tenant
 * whose arguments they are, or whose call an MCP answer answers), so a tenant
 * that sends costly calls by the hundred waits behind its own, and another
 * tenant's call waits for at most one of them.
 */
import { loaderArgs, WorkerPool, workerModule } from '../workers/pool.js'
import { overBudget, type Validation, type ValidationRunner } from './bounded-validate.js'

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

interface Job { key: number, schema: unknown, data: unknown, maxMs: number, fills: boolean }

export class ValidationThread implements ValidationRunner {
  readonly #pool = new WorkerPool<Job, Validation, Set<number>>({
    // The schema keys a worker has been sent.
    fresh: () => new Set(),
    request: (job, id, known) => {
      const request: Request = { id, key: job.key, data: job.data, maxMs: job.maxMs, fills: job.fills }
      if (!known.has(job.key)) request.schema = job.schema
      known.add(job.key)
      return request
    },
    deadlineMs: (job) => job.maxMs * DEADLINE_FACTOR
  }, {
    url: workerModule(import.meta.url, 'validation-worker'),
    size: 1,
    resourceLimits: RESOURCE_LIMITS,
    startDeadlineMs: START_DEADLINE_MS,
    // The test loader, for the TypeScript worker; none of the process's other options.
    execArgv: loaderArgs(process.execArgv)
  })

  /**
   * Validates on the thread in `owner`'s turn. Stopped at its deadline, out
   * of memory, not clonable (not JSON's), or with the thread closed or
   * unable to start: over budget, as a validation that took too long. A
   * schema that fills nothing (`fills` false) leaves the data as sent: a
   * valid verdict is the caller's own object, not a copy (none is sent back).
   */
  async validate (key: number, schema: unknown, data: unknown, maxMs: number, fills: boolean, owner = ''): Promise<Validation> {
    let verdict: Validation
    try {
      verdict = await this.#pool.run(owner, { key, schema, data, maxMs, fills })
    } catch {
      return overBudget(maxMs)
    }
    return verdict.valid && !fills ? { valid: true, value: data } : verdict
  }

  /** Ends the thread; validations still waiting answer over budget. */
  async close (): Promise<void> {
    await this.#pool.close()
  }
}
