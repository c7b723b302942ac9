/**
 * Admission as a table (SPEC section 6, and section 5's "every call is
 * prepared before any is dispatched"): which calls of a batch go on, from
 * the run's exact-repeat streak and its maxToolCalls budget, as the limits
 * and loops guards decide them together (src/guards/). No HTTP: each row is
 * the run's state, the batch and what admission decides.
 */
import t from 'tap'
import { admitThrough } from '../../src/guards/admission.js'
import { limitsGuard } from '../../src/guards/limits.js'
import { loopsGuard } from '../../src/guards/loops.js'
import type { GuardedBatch, GuardRuntime } from '../../src/guards/types.js'
import type { PreparationOutcome } from '../../src/model/call.js'
import { resolveRunOptions } from '../../src/runs/options.js'
import { emptyStats } from '../../src/runs/stats.js'
import type { RepeatState, RunLimits, RunRecord } from '../../src/model/run.js'
import { ObserverList } from '../../src/telemetry/types.js'

/** A call as admission reads it: its fingerprint, and its tool's `trackExactRepeats`. */
interface AdmissionCall { fingerprint: string, tracked: boolean }

type AdmissionDecision =
  | { kind: 'admit', advisory: number | null }
  | { kind: 'terminated', reason: string, count: number | null }

interface Admission {
  decisions: AdmissionDecision[]
  repeat: RepeatState
  admitted: number
  advisories: number
  termination: { reason: string, index: number } | null
}

/**
 * Admits `calls` on a run with this streak, budget spent and limits through
 * the limits and loops guards (cycles off: the rows are about exact
 * repeats), and reads back what they decided and reported.
 */
function admit (repeat: RepeatState, soFar: number, lim: RunLimits, calls: readonly AdmissionCall[]): Admission {
  const run = {
    state: 'active',
    terminationReason: null,
    options: { limits: { ...lim, cycleAdvisoryRepetitions: 0, cycleTerminationRepetitions: 0 } },
    counters: { turns: 1, toolCalls: soFar, totalTokens: 0 },
    repeat,
    admitted: null
  } as unknown as RunRecord
  const outcomes = calls.map((c, index) => ({ ok: true, index, id: `c${index}`, requestedName: 't', tool: { name: 't', trackExactRepeats: c.tracked }, arguments: {}, conflictKey: null })) as unknown as PreparationOutcome[]
  const batch: GuardedBatch = { runId: 'r', tenant: 't', batchId: 'b', leaseId: 'b', turn: 1, requestHash: 'h', scopes: new Set(), calls: [], outcomes, fingerprints: calls.map((c) => c.fingerprint) }
  const guards = [limitsGuard, loopsGuard].map((g) => g.open(batch))
  const a = admitThrough(guards, run, batch)
  const reported = new Map<string, { action: string, count: number }>()
  const view: GuardRuntime = {
    observer: new ObserverList([{ repeatDetected: (info, action, count) => { reported.set(info.callId, { action, count }) } }]),
    stats: emptyStats(),
    policyMessages: [],
    events: [],
    onEvent: undefined,
    stopped: () => false,
    startedAt: 0
  }
  for (const g of guards) g.begin?.(view, a)
  const decisions: AdmissionDecision[] = []
  let advisories = 0
  for (let i = 0; i < calls.length; i++) {
    const verdict = a.verdicts[i] ?? { kind: 'go' }
    for (const g of guards) g.report?.(i, verdict, a)
    const r = reported.get(`c${i}`)
    if (a.stop !== null && i >= a.cut) {
      decisions.push({ kind: 'terminated', reason: a.stop.reason, count: r?.action === 'terminated' ? r.count : null })
    } else {
      if (r !== undefined) advisories++
      decisions.push({ kind: 'admit', advisory: r?.count ?? null })
    }
  }
  return { decisions, repeat: run.repeat, admitted: a.cut, advisories, termination: a.stop === null ? null : { reason: a.stop.reason, index: a.stop.index } }
}

/** The default limits (advisory at 3, termination at 8, no budget), as a run without options has them. */
const DEFAULTS = resolveRunOptions({}, 4).limits
const limits = (over: Partial<RunLimits> = {}): RunLimits => ({ ...DEFAULTS, ...over }) as RunLimits
const fresh: RepeatState = { fingerprint: null, count: 0, advised: false }
const streak = (fingerprint: string, count: number, advised = false): RepeatState => ({ fingerprint, count, advised })
const calls = (...fingerprints: string[]): AdmissionCall[] =>
  fingerprints.map((f) => f.endsWith('~') ? { fingerprint: f.slice(0, -1), tracked: false } : { fingerprint: f, tracked: true })

const go: AdmissionDecision = { kind: 'admit', advisory: null }
const advise = (count: number): AdmissionDecision => ({ kind: 'admit', advisory: count })
const repeatStop = (count: number): AdmissionDecision => ({ kind: 'terminated', reason: 'exact_repeat', count })
const after = (reason: 'exact_repeat' | 'max_tool_calls'): AdmissionDecision => ({ kind: 'terminated', reason, count: null })
const budgetStop = after('max_tool_calls')

interface Row {
  name: string
  repeat?: RepeatState
  soFar?: number
  limits?: Partial<RunLimits>
  /** Fingerprints in source order; a trailing `~` marks a call of a tool with trackExactRepeats false. */
  calls: AdmissionCall[]
  want: Admission
}

const rows: Row[] = [
  {
    name: 'an empty batch admits nothing and leaves the streak as it was',
    repeat: streak('a', 2),
    calls: [],
    want: { decisions: [], repeat: streak('a', 2), admitted: 0, advisories: 0, termination: null }
  },
  {
    name: 'distinct calls are all admitted; the streak ends on the last one',
    calls: calls('a', 'b', 'c'),
    want: { decisions: [go, go, go], repeat: streak('c', 1), admitted: 3, advisories: 0, termination: null }
  },
  {
    name: 'the third identical call in a row is admitted with an advisory',
    calls: calls('a', 'a', 'a'),
    want: { decisions: [go, go, advise(3)], repeat: streak('a', 3, true), admitted: 3, advisories: 1, termination: null }
  },
  {
    name: 'a streak carried from earlier batches advises at its third call, once',
    repeat: streak('a', 2),
    calls: calls('a', 'a', 'a'),
    want: { decisions: [advise(3), go, go], repeat: streak('a', 5, true), admitted: 3, advisories: 1, termination: null }
  },
  {
    name: 'a streak that advised already does not advise again',
    repeat: streak('a', 3, true),
    calls: calls('a'),
    want: { decisions: [go], repeat: streak('a', 4, true), admitted: 1, advisories: 0, termination: null }
  },
  {
    name: 'the eighth identical call is terminated, later calls after it, and only the calls before it count',
    repeat: streak('a', 6, true),
    calls: calls('a', 'a', 'b', 'c'),
    want: {
      decisions: [go, repeatStop(8), after('exact_repeat'), after('exact_repeat')],
      repeat: streak('a', 8, true),
      admitted: 1,
      advisories: 0,
      termination: { reason: 'exact_repeat', index: 1 }
    }
  },
  {
    name: 'another call starts a new streak, which may advise again',
    repeat: streak('a', 3, true),
    calls: calls('b', 'b', 'b'),
    want: { decisions: [go, go, advise(3)], repeat: streak('b', 3, true), admitted: 3, advisories: 1, termination: null }
  },
  {
    name: 'untracked calls neither advance nor reset the streak, but are admitted and counted',
    repeat: streak('a', 1),
    calls: calls('a', 'x~', 'a', 'a~'),
    want: { decisions: [go, go, advise(3), go], repeat: streak('a', 3, true), admitted: 4, advisories: 1, termination: null }
  },
  {
    name: 'equal thresholds terminate rather than advise',
    limits: { exactToolRepeatAdvisoryThreshold: 2, exactToolRepeatTerminationThreshold: 2 },
    calls: calls('a', 'a'),
    want: { decisions: [go, repeatStop(2)], repeat: streak('a', 2), admitted: 1, advisories: 0, termination: { reason: 'exact_repeat', index: 1 } }
  },
  {
    name: 'thresholds of 0 disable both actions',
    limits: { exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 0 },
    repeat: streak('a', 100),
    calls: calls('a', 'a'),
    want: { decisions: [go, go], repeat: streak('a', 102), admitted: 2, advisories: 0, termination: null }
  },
  {
    name: 'a stored streak already past the termination threshold terminates at once',
    repeat: streak('a', 9, true),
    calls: calls('a'),
    want: { decisions: [repeatStop(10)], repeat: streak('a', 10, true), admitted: 0, advisories: 0, termination: { reason: 'exact_repeat', index: 0 } }
  },
  {
    name: 'calls beyond the maxToolCalls budget are terminated, and those within it count',
    soFar: 3,
    limits: { maxToolCalls: 5 },
    calls: calls('a', 'b', 'c', 'd'),
    want: { decisions: [go, go, budgetStop, budgetStop], repeat: streak('b', 1), admitted: 2, advisories: 0, termination: { reason: 'max_tool_calls', index: 2 } }
  },
  {
    name: 'a budget spent before the batch terminates its first call',
    soFar: 5,
    limits: { maxToolCalls: 5 },
    calls: calls('a', 'b'),
    want: { decisions: [budgetStop, budgetStop], repeat: fresh, admitted: 0, advisories: 0, termination: { reason: 'max_tool_calls', index: 0 } }
  },
  {
    name: 'a budget that fits the batch exactly terminates nothing',
    soFar: 3,
    limits: { maxToolCalls: 5 },
    calls: calls('a', 'b'),
    want: { decisions: [go, go], repeat: streak('b', 1), admitted: 2, advisories: 0, termination: null }
  },
  {
    name: 'the budget cuts the batch before the repeat tracker sees it: a repeat beyond the budget is not counted',
    repeat: streak('a', 6, true),
    limits: { maxToolCalls: 1 },
    calls: calls('a', 'a'),
    want: { decisions: [go, budgetStop], repeat: streak('a', 7, true), admitted: 1, advisories: 0, termination: { reason: 'max_tool_calls', index: 1 } }
  },
  {
    name: 'a repeat terminated within the budget ends the run for the repeat, not the budget',
    repeat: streak('a', 7, true),
    limits: { maxToolCalls: 2 },
    calls: calls('a', 'b', 'c'),
    want: {
      decisions: [repeatStop(8), after('exact_repeat'), after('exact_repeat')],
      repeat: streak('a', 8, true),
      admitted: 0,
      advisories: 0,
      termination: { reason: 'exact_repeat', index: 0 }
    }
  }
]

for (const row of rows) {
  t.test(row.name, async (t) => {
    const before = structuredClone(row.repeat ?? fresh)
    t.strictSame(admit(row.repeat ?? fresh, row.soFar ?? 0, limits(row.limits), row.calls), row.want)
    t.same(row.repeat ?? fresh, before, 'the stored streak is not changed in place')
  })
}

t.test('a negative threshold is refused with the name of the setting', async (t) => {
  t.throws(() => admit(fresh, 0, limits({ exactToolRepeatAdvisoryThreshold: -1 }), calls('a')), /`thresholds\.advisory`.*got -1/)
  t.throws(() => admit(fresh, 0, limits({ exactToolRepeatTerminationThreshold: 1.5 }), calls('a')), /`thresholds\.termination`.*got 1\.5/)
})
