/**
 * Admission through the guards, inside the run's atomic update: each guard
 * in registration order gives its verdicts and may terminate the run at a
 * call; then each counts what was admitted in its slice of the run. Pure
 * over the record: a store that re-runs the update gets the same answer.
 */
import type { RunRecord } from '../model/run.js'
import type { StopReason } from '../model/results.js'
import { terminate } from '../runs/transitions.js'
import { type AdmissionScope, type AdmissionStart, type Admitted, type BatchGuard, GO, type GuardedBatch, type Stop, type Verdict } from './types.js'

class Scope implements AdmissionScope {
  readonly run: RunRecord
  readonly start: AdmissionStart
  readonly batch: GuardedBatch
  readonly verdicts: Verdict[]
  cut: number
  stop: Stop | null = null

  constructor (run: RunRecord, start: AdmissionStart, batch: GuardedBatch) {
    this.run = run
    this.start = start
    this.batch = batch
    this.cut = batch.outcomes.length
    this.verdicts = batch.outcomes.map(() => GO)
  }

  terminate (index: number, reason: StopReason, by: string): void {
    if (index >= this.cut) return
    this.cut = index
    this.stop = { index, reason, by }
  }

  verdict (index: number, v: Verdict): void {
    if (this.verdicts[index]?.kind === 'go') this.verdicts[index] = v
  }
}

/**
 * Admits a batch on `r` through `guards`. A run that is not active admits
 * nothing. A batch admitted before (resumed after its replica died, or
 * taken up after approvals) starts again from where its first admission
 * started (`r.admitted`), so its calls count once.
 */
export function admitThrough (guards: readonly BatchGuard[], r: RunRecord, batch: GuardedBatch): Admitted {
  if (r.state !== 'active') return { verdicts: [], cut: 0, stop: null, notActive: r.terminationReason ?? 'run_not_active' }
  const start: AdmissionStart = r.admitted?.batchId === batch.batchId ? r.admitted : { batchId: batch.batchId }
  const scope = new Scope(r, start, batch)
  for (const g of guards) g.admit?.(scope)
  r.admitted = start
  for (const g of guards) g.count?.(scope)
  if (scope.stop !== null) terminate(r, scope.stop.reason)
  return { verdicts: scope.verdicts, cut: scope.cut, stop: scope.stop, notActive: null }
}

/** Verdicts before the run is read (`screen`): whether a guard holds a call of the batch. */
export function screenThrough (guards: readonly BatchGuard[], size: number): Verdict[] | null {
  let verdicts: Verdict[] | null = null
  for (const g of guards) {
    if (g.screen === undefined) continue
    verdicts ??= Array.from({ length: size }, () => GO)
    g.screen(verdicts)
  }
  return verdicts
}
