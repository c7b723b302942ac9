/**
 * The run-level rules, registered: the batch's phases call each guard's
 * hooks in this order (src/guards/types.ts). The order is the rules'
 * precedence: the call budget cuts a batch before the loop detectors walk
 * it; a person's denial settles a call before retry safety weighs it; a
 * write is recorded before it waits for its tenant-scoped key.
 * A new rule is one guard file and one line here.
 */
import type { Clock } from '../clock.js'
import type { UncertainWrites } from '../uncertain/service.js'
import { type ApprovalsDeps, approvalsGuard } from './approvals.js'
import { arrivalsGuard } from './arrivals.js'
import { limitsGuard } from './limits.js'
import { loopsGuard } from './loops.js'
import { retrySafetyGuard } from './retry-safety.js'
import { type TenantKeyDeps, tenantKeyGuard } from './tenant-key.js'
import { type WriteAheadDeps, writeAheadGuard } from './write-ahead.js'
import type { BatchGuard, Guard, GuardedBatch, ResetCause, TurnStart } from './types.js'
import type { RunRecord, TerminationReason } from '../model/run.js'

/** What the registered guards are built with. */
export interface GuardSetup extends Omit<ApprovalsDeps, 'store'>, TenantKeyDeps {
  store: ApprovalsDeps['store'] & WriteAheadDeps['store']
  clock: Clock
  /** Retry safety's service (indexing and recovering uncertain writes), when there is one. */
  uncertain?: UncertainWrites | undefined
}

/** The registered guards, in the order their hooks run. */
export function registerGuards (setup: GuardSetup): Guard[] {
  return [
    limitsGuard,
    loopsGuard,
    approvalsGuard(setup),
    // Before retry safety: the very call of a resent batch whose replica was lost is answered uncertain, not blocked as its own retry.
    writeAheadGuard(setup),
    retrySafetyGuard(setup.uncertain, setup.clock),
    // After write-ahead: a write whose record could not be stored never waits for its key.
    tenantKeyGuard(setup),
    // Last: a retry of an uncertain write is answered as one; a write that waited behind it is blocked.
    arrivalsGuard
  ]
}

/** Each guard's part in one batch, in registration order. */
export function openGuards (guards: readonly Guard[], batch: GuardedBatch): BatchGuard[] {
  return guards.map((g) => g.open(batch))
}

/** Inside the atomic update that starts a new batch: the first reason a guard gives to end the run instead, or null. */
export function startTurn (guards: readonly Guard[], run: RunRecord, turn: TurnStart): TerminationReason | null {
  for (const g of guards) {
    const stop = g.startTurn?.(run, turn) ?? null
    if (stop !== null) return stop
  }
  return null
}

/** Inside the run's atomic update: every guard's slice of the run starts over. */
export function resetGuards (guards: readonly Guard[], run: RunRecord, cause: ResetCause): void {
  for (const g of guards) g.reset?.(run, cause)
}

/** What a call not run reads once the run was terminated for `reason`: the text of the rule that gives that reason. */
export function stopMessage (guards: readonly Guard[], reason: string): string | undefined {
  for (const g of guards) {
    const text = g.stops?.[reason]
    if (text !== undefined) return text
  }
  return undefined
}
