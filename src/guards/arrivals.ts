/**
 * Calls that arrive one at a time (each MCP `tools/call` is a batch of one
 * call) are scheduled together by arrival (src/schedule/arrivals.ts). A
 * write that waited its turn while an earlier write of its run became
 * uncertain is sent with the id of that write (`GuardedBatch.blockedBy`):
 * this guard settles it `blocked` at admission, as the epoch runner blocks
 * a batch's later writes behind an uncertain one, and counts it.
 */
import { blockedResult } from '../model/results.js'
import type { RunStats } from '../model/run.js'
import type { AdmissionScope, BatchGuard, Guard, GuardedBatch, GuardRuntime, Verdict } from './types.js'

const NAME = 'arrivals'

/** What a batch not blocked by arrival gets: no hooks. */
const NONE: BatchGuard = Object.freeze({})

class ArrivalGuard implements BatchGuard {
  readonly #batch: GuardedBatch
  readonly #blockedBy: string
  #stats: RunStats | null = null

  constructor (batch: GuardedBatch, blockedBy: string) {
    this.#batch = batch
    this.#blockedBy = blockedBy
  }

  admit (scope: AdmissionScope): void {
    this.#batch.outcomes.forEach((o, i) => {
      if (o.ok && !o.tool.readOnly) scope.verdict(i, { kind: 'settle', result: blockedResult(o, this.#blockedBy, 0), by: NAME })
    })
  }

  begin (rt: GuardRuntime): void {
    this.#stats = rt.stats
  }

  report (_index: number, verdict: Verdict): void {
    if (verdict.kind === 'settle' && verdict.by === NAME && this.#stats !== null) this.#stats.blockedCalls++
  }
}

/** The guard: hooks only for a batch sent blocked (`GuardedBatch.blockedBy`). */
export const arrivalsGuard: Guard = {
  name: NAME,
  open: (batch) => batch.blockedBy === undefined ? NONE : new ArrivalGuard(batch, batch.blockedBy)
}
