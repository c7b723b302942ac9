import type { BatchAnswers } from './batch-answers.js'
import { type BatchEntry, type BatchRecord, type BatchSummary, batchEntry } from './records.js'
import { TenantBytes } from './tenant-bytes.js'

/**
 * Each run's batch ids and their answers, in memory. The run state
 * (`MemoryRunState`) writes them in the same synchronous step as the run
 * (a batch id with the lease-taking update, an answer with the release) and
 * frees them with the run; this class answers the `BatchAnswers` reads.
 */
export class MemoryBatchAnswers implements BatchAnswers {
  /** Made with the run's first batch, so an idle run holds none. */
  readonly #byRun = new Map<string, Map<string, HeldBatch>>()
  /** Bytes of answers each run holds, and whose run it is. */
  readonly #bytesOfRun = new Map<string, { tenant: string, bytes: number }>()
  /** Bytes of answers each tenant's runs hold. */
  readonly #bytes = new TenantBytes()
  /** Drops the run if it expired, as every read of the run state does first. */
  readonly #expire: (runId: string) => void

  constructor (expire: (runId: string) => void) {
    this.#expire = expire
  }

  async getBatch (runId: string, batchId: string): Promise<BatchRecord | undefined> {
    const held = this.#byRun.get(runId)?.get(batchId)
    if (held?.answer == null) return undefined
    const record: BatchRecord = { batchId, requestHash: held.requestHash, responseJson: held.answer.toString(), completedAt: held.completedAt }
    if (held.summary !== null) record.summary = held.summary
    return record
  }

  async listBatches (runId: string): Promise<BatchEntry[]> {
    this.#expire(runId)
    const out: BatchEntry[] = []
    for (const [batchId, held] of this.#byRun.get(runId) ?? []) {
      if (held.answer === null) continue
      const { completedAt, summary } = held
      out.push(summary === null
        ? batchEntry({ batchId, requestHash: held.requestHash, completedAt, responseJson: held.answer.toString() })
        : { batchId, completedAt, ...summary, statuses: { ...summary.statuses } })
    }
    return out
  }

  /** The hash a run's batch id was recorded with, or undefined. */
  hashOf (runId: string, batchId: string): string | undefined {
    return this.#byRun.get(runId)?.get(batchId)?.requestHash
  }

  /** Records a batch id with the hash of its calls. */
  record (runId: string, batchId: string, requestHash: string): void {
    this.#ofRun(runId).set(batchId, new HeldBatch(requestHash))
  }

  /** Bytes of answers held, of every run. */
  get bytes (): number {
    return this.#bytes.total
  }

  /** The tenant whose runs hold the most bytes of answers. */
  largestTenant (): string | undefined {
    return this.#bytes.largest()
  }

  /** Stores a finished batch's answer under its batch id (the run is `tenant`'s). */
  store (runId: string, record: BatchRecord, tenant: string): void {
    const batches = this.#ofRun(runId)
    let held = batches.get(record.batchId)
    if (held === undefined || held.requestHash !== record.requestHash) batches.set(record.batchId, (held = new HeldBatch(record.requestHash)))
    const before = held.answer?.length ?? 0
    held.answer = Buffer.from(record.responseJson)
    this.#count(runId, tenant, held.answer.length - before)
    held.completedAt = record.completedAt
    held.summary = record.summary ?? null
  }

  /** Frees a run's batch ids and answers. */
  drop (runId: string): void {
    this.#byRun.delete(runId)
    const held = this.#bytesOfRun.get(runId)
    if (held !== undefined) this.#count(runId, held.tenant, -held.bytes)
  }

  #count (runId: string, tenant: string, by: number): void {
    const run = this.#bytesOfRun.get(runId) ?? { tenant, bytes: 0 }
    run.bytes += by
    if (run.bytes > 0) this.#bytesOfRun.set(runId, run)
    else this.#bytesOfRun.delete(runId)
    this.#bytes.add(run.tenant, by)
  }

  /** A run's map, made when the run first needs it. */
  #ofRun (runId: string): Map<string, HeldBatch> {
    let map = this.#byRun.get(runId)
    if (map === undefined) this.#byRun.set(runId, (map = new Map()))
    return map
  }
}

/**
 * A batch id a run got, with the hash of its calls and, once it finished,
 * its answer. The answer is held as UTF-8 bytes outside the JavaScript heap:
 * every batch's answer is kept as long as its run, and as a string each one
 * was copied by two scavenges and then marked by every full collection
 * (about 10 µs of collector time per batch); a Buffer is one small object.
 */
class HeldBatch {
  readonly requestHash: string
  answer: Buffer | null = null
  completedAt = 0
  summary: BatchSummary | null = null
  constructor (requestHash: string) {
    this.requestHash = requestHash
  }
}
