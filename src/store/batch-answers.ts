import type { BatchEntry, BatchRecord } from './records.js'

/**
 * The stored answers of finished batches, replayed on resubmission and
 * listed per run. Read-only: an answer is written by
 * `RunStateStore.completeBatch` in the same atomic step that releases the
 * run's lease, and freed with the run, so an implementation reads the data
 * of the run state it is paired with.
 */
export interface BatchAnswers {
  /** The answer stored for one batch id of a run, or undefined. */
  getBatch (runId: string, batchId: string): Promise<BatchRecord | undefined>
  /** The run's finished batches (their stored answers summarized), in no particular order. */
  listBatches (runId: string): Promise<BatchEntry[]>
}
