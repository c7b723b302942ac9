import { type RunIdentity, identityOf, isIncarnation } from '../model/incarnation.js'
import type { RunRecord } from '../model/run.js'
import type { Uncertainty } from '../model/uncertainty.js'
import type { MemoryRunState } from './memory-runs.js'
import type { MemoryUncertainWrites } from './memory-uncertain.js'
import { holds } from './records.js'
import { type LeaseHolder, type PendingWrite, type WriteAhead, takeOver } from './write-ahead.js'

/**
 * Write-ahead records in one process, beside the memory run state they
 * follow: answered (dropped) when a batch's answer is stored, and gone with
 * their run. Each method's work is synchronous, so it is atomic with the
 * run's updates.
 */
export class MemoryWriteAhead implements WriteAhead {
  /** Run id → the incarnation its records belong to, and the records by operation id. */
  readonly #records = new Map<string, { run: RunIdentity, writes: Map<string, PendingWrite> }>()
  readonly #runs: MemoryRunState
  readonly #uncertain: MemoryUncertainWrites
  readonly #now: () => number

  constructor (runs: MemoryRunState, uncertain: MemoryUncertainWrites, now: () => number) {
    this.#runs = runs
    this.#uncertain = uncertain
    this.#now = now
  }

  async recordWrites (run: RunIdentity, lease: LeaseHolder, writes: readonly PendingWrite[]): Promise<boolean> {
    const record = this.#runs.peek(run.runId)
    if (record === undefined || !isIncarnation(record, run) || !holds(record, lease.owner, lease.batchId) || record.inFlight!.leaseExpiresAt <= this.#now()) return false
    if (writes.length === 0) return true
    let entry = this.#records.get(run.runId)
    if (entry === undefined || !isIncarnation(record, entry.run)) this.#records.set(run.runId, entry = { run: identityOf(run), writes: new Map() })
    for (const w of writes) entry.writes.set(w.operationId, { ...w })
    return true
  }

  async pendingWrites (run: RunIdentity): Promise<PendingWrite[]> {
    const entry = this.#records.get(run.runId)
    if (entry === undefined || !isIncarnation(run, entry.run)) return []
    return [...entry.writes.values()].map((w) => ({ ...w }))
  }

  async takeOverWrites (run: RunIdentity): Promise<Uncertainty[] | undefined> {
    let made: Uncertainty[] | undefined
    await this.#runs.updateRun(run.runId, (record) => {
      if (!isIncarnation(record, run)) return
      const entry = this.#records.get(run.runId)
      const writes = entry !== undefined && isIncarnation(record, entry.run) ? [...entry.writes.values()] : []
      made = takeOver(record, writes, this.#now())
      if (made === undefined) return
      this.#records.delete(run.runId)
      // Synchronous in this store: noted in the same step.
      if (made.length > 0) void this.#uncertain.indexUncertain(run.runId, made.map((u) => u.operationId))
    })
    return made?.map((u) => ({ ...u }))
  }

  /** A batch that shared its run's lease stored its answer: its own writes are answered, the others' calls may still run. */
  answer (run: RunRecord, operationIds: readonly string[]): void {
    const entry = this.#records.get(run.runId)
    if (entry === undefined || !isIncarnation(run, entry.run)) return
    for (const id of operationIds) entry.writes.delete(id)
    if (entry.writes.size === 0) this.#records.delete(run.runId)
  }

  /** A batch's answer was stored: every write of its run is answered. Its run left: its records go too. */
  drop (run: RunRecord): void {
    const entry = this.#records.get(run.runId)
    if (entry !== undefined && isIncarnation(run, entry.run)) this.#records.delete(run.runId)
  }
}
