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
import { WorkerJobError, WorkerPool, workerModule } from '../workers/pool.js'
import { type ProjectionLimits, describeJsonataError } from './projection-expression.js'
import type { ProjectionCheck } from '../model/tool.js'
import type { ProjectionAnswer, ProjectionRequest } from './projection-worker.js'

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
 * The code of jsonata's own time-box error: a projection stopped at its
 * deadline fails as one that jsonata stopped, whichever came first.
 */
const TIMED_OUT = 'D1012'
/** Starting a worker and loading jsonata: long enough for a loaded machine, not for ever. */
const START_DEADLINE_MS = 10_000

function failure (reason: string): Error {
  return new Error(`Projection evaluation failed: ${reason}`)
}

/**
 * Evaluates projections on a small pool of worker threads (a WorkerPool,
 * src/workers/pool.ts), one projection per worker at a time; the rest wait,
 * each owner's (tenant's) in arrival order and the owners in turn, so one
 * tenant's backlog of costly projections never holds another tenant's. A
 * projection's time box starts when a worker takes it, not while it waits:
 * each one ahead of it is bounded by its own box, and a projection is never
 * failed for the work of another. Idle workers never keep the process
 * alive, and {@link close} terminates them.
 */
export class ProjectionPool {
  readonly #pool: WorkerPool<ProjectionJob, ProjectionAnswer, null>

  constructor (opts: ProjectionPoolOptions = {}) {
    const o = { ...DEFAULTS, ...opts }
    for (const [name, value] of Object.entries(o)) {
      if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`Expected \`${name}\` to be a positive integer, got ${String(value)}`)
    }
    this.#pool = new WorkerPool<ProjectionJob, ProjectionAnswer, null>({
      fresh: () => null,
      request: (job, id): ProjectionRequest => ({ id, source: job.source, limits: job.limits, input: job.input, maxChars: job.maxChars }),
      deadlineMs: (job) => job.limits.timeoutMs + o.graceMs
    }, {
      url: workerModule(import.meta.url, 'projection-worker'),
      size: o.size,
      resourceLimits: { maxOldGenerationSizeMb: o.maxOldGenerationSizeMb, maxYoungGenerationSizeMb: o.maxYoungGenerationSizeMb, stackSizeMb: o.stackSizeMb },
      startDeadlineMs: START_DEADLINE_MS
    })
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
    let answer: ProjectionAnswer
    try {
      answer = await this.#pool.run(owner, job)
    } catch (err) {
      if (!(err instanceof WorkerJobError)) throw err
      throw failure(err.reason === 'deadline' ? TIMED_OUT : err.reason === 'uncloneable' ? describeJsonataError(err.cause, false) : err.reason)
    }
    if ('failure' in answer) throw failure(answer.failure)
    return answer.check
  }

  /** Terminates the workers; projections in flight or waiting fail (`closed`). */
  async close (): Promise<void> {
    await this.#pool.close()
  }
}
