import type { RunRecord } from '../model/run.js'
import type { MemoryRunState } from './memory-runs.js'
import type { UncertainWrites } from './uncertain-writes.js'

/**
 * The uncertain-write index and recovery locks in one process. The index
 * points into the memory run state it is given: its entries go with their
 * run (`forget`), and the count is read from the run records themselves.
 */
export class MemoryUncertainWrites implements UncertainWrites {
  /** Operation id of an uncertain write noted by indexUncertain, resolved since or not → its run. */
  readonly #runOf = new Map<string, string>()
  /** Run id → the operation ids noted for it: they go together when the run leaves. */
  readonly #noted = new Map<string, Set<string>>()
  readonly #locks = new Map<string, { owner: string, until: number }>()
  readonly #runs: MemoryRunState
  readonly #now: () => number

  constructor (runs: MemoryRunState, now: () => number) {
    this.#runs = runs
    this.#now = now
  }

  async indexUncertain (runId: string, operationIds: readonly string[]): Promise<void> {
    if (!this.#runs.has(runId)) return
    let noted = this.#noted.get(runId)
    if (noted === undefined) this.#noted.set(runId, noted = new Set())
    for (const id of operationIds) {
      this.#runOf.set(id, runId)
      noted.add(id)
    }
  }

  async unindexUncertain (): Promise<void> {
    // The count is read from the run records, which no longer hold it; its run stays findable while the run is held.
  }

  async runOfUncertain (operationId: string): Promise<string | undefined> {
    const runId = this.#runOf.get(operationId)
    if (runId !== undefined) this.#runs.expire(runId)
    return runId !== undefined && this.#runs.has(runId) ? runId : undefined
  }

  async countUncertain (): Promise<number> {
    let n = 0
    const now = this.#now()
    // An expired run not swept yet is gone for every other method: not counted either.
    for (const run of this.#runs.records()) if (!this.#runs.expired(run, now)) n += run.uncertain?.length ?? 0
    return n
  }

  async tryLock (name: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = this.#now()
    const held = this.#locks.get(name)
    if (held !== undefined && held.until > now && held.owner !== owner) return false
    this.#locks.set(name, { owner, until: now + ttlMs })
    return true
  }

  async unlock (name: string, owner: string): Promise<void> {
    if (this.#locks.get(name)?.owner === owner) this.#locks.delete(name)
  }

  /** The run left the store: its uncertain writes, resolved or not, are no longer indexed. */
  forget (run: RunRecord): void {
    for (const id of this.#noted.get(run.runId) ?? []) if (this.#runOf.get(id) === run.runId) this.#runOf.delete(id)
    this.#noted.delete(run.runId)
  }

  /** Drops lapsed locks. */
  sweep (): void {
    const now = this.#now()
    for (const [name, lock] of this.#locks) if (lock.until <= now) this.#locks.delete(name)
  }
}
