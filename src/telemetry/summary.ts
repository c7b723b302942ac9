import { LOOP_KIND_LIST } from '../repeat/kinds/index.js'
import { emptyLoopCounts } from '../repeat/loops.js'
import { addStats, emptyStats } from '../runs/stats.js'
import type { RunStats } from '../model/run.js'
import type { LoopKind } from '../model/loops.js'

/** A performance summary (SPEC section 8), per run or across runs. */
export interface Summary {
  turns: number
  calls: number
  callsByStatus: Record<string, number>
  epochs: number
  largestEpoch: number
  toolTimeMs: number
  wallTimeMs: number
  /** Tool time that overlapping hid: time in tools minus wall time, never below 0. */
  timeSavedMs: number
  repeatAdvisories: number
  repeatTerminations: number
  /** Advisories and terminations of each loop kind (SPEC section 15); `exact` is repeatAdvisories and repeatTerminations. */
  loopDetections: Record<LoopKind, { advisories: number, terminations: number }>
  projectionFailures: number
  uncertainWrites: number
  blockedCalls: number
  /** Decisions on calls held for a person: approved, denied, expired. */
  approvals: { approved: number, denied: number, expired: number }
}

export function summarize (stats: RunStats | null, turns: number): Summary {
  const s = stats ?? emptyStats()
  let calls = 0
  for (const n of Object.values(s.callsByStatus)) calls += n
  return {
    turns,
    calls,
    callsByStatus: { ...s.callsByStatus },
    epochs: s.epochs,
    largestEpoch: s.largestEpoch,
    toolTimeMs: ms(s.toolTimeMs),
    wallTimeMs: ms(s.wallTimeMs),
    timeSavedMs: ms(Math.max(0, s.toolTimeMs - s.wallTimeMs)),
    repeatAdvisories: s.repeatAdvisories,
    repeatTerminations: s.repeatTerminations,
    loopDetections: { exact: { advisories: s.repeatAdvisories, terminations: s.repeatTerminations }, ...emptyLoopCounts(LOOP_KIND_LIST), ...structuredClone(s.loops ?? {}) },
    projectionFailures: s.projectionFailures,
    uncertainWrites: s.uncertainWrites,
    blockedCalls: s.blockedCalls,
    approvals: { ...(s.approvals ?? { approved: 0, denied: 0, expired: 0 }) }
  }
}

/** Figures of every batch this process ran since it started. */
export class SummaryAggregator {
  #stats = emptyStats()
  #turns = 0
  #runs = 0
  readonly startedAt = new Date().toISOString()

  /** One batch's figures. */
  add (stats: RunStats): void {
    this.#stats = addStats(this.#stats, stats)
    this.#turns++
  }

  runCreated (): void {
    this.#runs++
  }

  get runsCreated (): number {
    return this.#runs
  }

  summary (): Summary {
    return summarize(this.#stats, this.#turns)
  }
}

function ms (n: number): number {
  return Math.round(n * 1000) / 1000
}
