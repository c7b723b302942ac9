import type { RunRecord } from '../model/run.js'
import type { MemoryRunState } from './memory-runs.js'
import type { UncertainWrites } from './uncertain-writes.js'

/**
 * The uncertain-write index and recovery locks in one process. The index
 * points into the memory run state it is given: its entries go with their
 * run (`forget`), and the count is read from the run records themselves.
 */
export class MemoryUncertainWrites implements UncertainWrites {
  /** Operation id of an unresolved uncertain write → its run. */
  readonly #runOf = new Map<string, string>()
  readonly #locks = new Map<string, { owner: string, until: number }>()
  readonly #runs: MemoryRunState
  readonly #now: () => number

  constructor (runs: MemoryRunState, now: () => number) {
    this.#runs = runs
    this.#now = now
  }

  async indexUncertain (runId: string, operationIds: readonly string[]): Promise<void> {
    if (!this.#runs.has(runId)) return
    for (const id of operationIds) this.#runOf.set(id, runId)
  }

  async unindexUncertain (operationId: string): Promise<void> {
    this.#runOf.delete(operationId)
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

  /** The run left the store: its uncertain writes are no longer indexed. */
  forget (run: RunRecord): void {
    for (const u of run.uncertain ?? []) this.#runOf.delete(u.operationId)
  }

  /** Drops lapsed locks. */
  sweep (): void {
    const now = this.#now()
    for (const [name, lock] of this.#locks) if (lock.until <= now) this.#locks.delete(name)
  }
}
