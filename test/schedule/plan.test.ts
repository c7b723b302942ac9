import t from 'tap'
import { isEligibleToOverlap, planEpochs } from '../../src/schedule/plan.js'
import type { SchedulableCall } from '../../src/schedule/types.js'
import type { ToolExecutionMode } from '../../src/model/run.js'
import type { ExecutionHint } from '../../src/model/tool.js'

const MODES: readonly ToolExecutionMode[] = ['sequential', 'safeParallel', 'parallel']

/** A compact call: R/W for readOnly, then a for auto, p for parallel, s for sequential. */
type Code = 'Ra' | 'Rp' | 'Rs' | 'Wa' | 'Wp' | 'Ws'
const HINTS: Record<string, ExecutionHint> = { a: 'auto', p: 'parallel', s: 'sequential' }

function calls (codes: readonly Code[]): SchedulableCall[] {
  return codes.map((code, index) => ({
    index,
    id: `c${index}`,
    readOnly: code[0] === 'R',
    execution: HINTS[code[1]!]!,
    conflictKey: null
  }))
}

/** Epochs as lists of call ids, for readable expectations. */
function plan (codes: readonly Code[], mode: ToolExecutionMode): string[][] {
  return planEpochs(calls(codes), mode).map((epoch) => epoch.map((c) => c.id))
}

t.test('eligibility to overlap follows the table of SPEC section 5 for every mode and hint', (t) => {
  // [readOnly, execution, sequential, safeParallel, parallel]
  const table: Array<[boolean, ExecutionHint, boolean, boolean, boolean]> = [
    [true, 'auto', false, true, true],
    [true, 'parallel', false, true, true],
    [true, 'sequential', false, false, false],
    [false, 'auto', false, false, true],
    [false, 'parallel', false, true, true],
    [false, 'sequential', false, false, false]
  ]
  for (const [readOnly, execution, ...expected] of table) {
    for (const [i, mode] of MODES.entries()) {
      t.equal(isEligibleToOverlap({ readOnly, execution }, mode), expected[i], `${readOnly ? 'read' : 'write'} ${execution} in ${mode}`)
    }
  }
  t.end()
})

t.test('a lone call of every kind forms one epoch in every mode', (t) => {
  for (const code of ['Ra', 'Rp', 'Rs', 'Wa', 'Wp', 'Ws'] as const) {
    for (const mode of MODES) t.strictSame(plan([code], mode), [['c0']], `${code} in ${mode}`)
  }
  t.end()
})

t.test('two consecutive calls share an epoch exactly when both are eligible', (t) => {
  const codes: Code[] = ['Ra', 'Rp', 'Rs', 'Wa', 'Wp', 'Ws']
  for (const mode of MODES) {
    for (const a of codes) {
      for (const b of codes) {
        const shared = isEligibleToOverlap(calls([a])[0]!, mode) && isEligibleToOverlap(calls([b])[0]!, mode)
        t.strictSame(plan([a, b], mode), shared ? [['c0', 'c1']] : [['c0'], ['c1']], `${a} then ${b} in ${mode}`)
      }
    }
  }
  t.end()
})

t.test('worked plans for each mode', (t) => {
  // [calls, mode, epochs]
  const cases: Array<[Code[], ToolExecutionMode, string[][]]> = [
    // sequential: every call is a barrier, whatever its hints
    [['Ra', 'Rp', 'Wp', 'Wa'], 'sequential', [['c0'], ['c1'], ['c2'], ['c3']]],
    // safeParallel: reads overlap, a plain write is a barrier
    [['Ra', 'Ra', 'Wa', 'Ra', 'Ra'], 'safeParallel', [['c0', 'c1'], ['c2'], ['c3', 'c4']]],
    // safeParallel: a write that opts in with execution "parallel" joins the reads
    [['Ra', 'Wp', 'Ra'], 'safeParallel', [['c0', 'c1', 'c2']]],
    // safeParallel: a read with execution "sequential" is a barrier
    [['Ra', 'Rs', 'Ra'], 'safeParallel', [['c0'], ['c1'], ['c2']]],
    // parallel: plain writes overlap too
    [['Wa', 'Wa', 'Ra', 'Wp'], 'parallel', [['c0', 'c1', 'c2', 'c3']]],
    // parallel: only execution "sequential" is a barrier, read or write
    [['Wa', 'Ws', 'Ra', 'Rs', 'Wa', 'Wa'], 'parallel', [['c0'], ['c1'], ['c2'], ['c3'], ['c4', 'c5']]],
    // consecutive barriers each stand alone
    [['Ra', 'Wa', 'Wa', 'Ra'], 'safeParallel', [['c0'], ['c1'], ['c2'], ['c3']]],
    [['Ws', 'Rs'], 'parallel', [['c0'], ['c1']]],
    // barriers at the start and the end
    [['Wa', 'Ra', 'Rp', 'Wa'], 'safeParallel', [['c0'], ['c1', 'c2'], ['c3']]]
  ]
  for (const [codes, mode, epochs] of cases) t.strictSame(plan(codes, mode), epochs, `${codes.join(' ')} in ${mode}`)
  t.end()
})

t.test('a barrier splits a run of eligible calls into two epochs', (t) => {
  for (const [mode, barrier] of [['sequential', 'Ra'], ['safeParallel', 'Wa'], ['safeParallel', 'Rs'], ['parallel', 'Ws'], ['parallel', 'Rs']] as const) {
    const eligible: Code = mode === 'sequential' ? 'Ra' : 'Rp'
    const expected = mode === 'sequential'
      ? [['c0'], ['c1'], ['c2'], ['c3'], ['c4']]
      : [['c0', 'c1'], ['c2'], ['c3', 'c4']]
    t.strictSame(plan([eligible, eligible, barrier, eligible, eligible], mode), expected, `${barrier} in ${mode}`)
  }
  t.end()
})

t.test('an empty batch plans no epochs', (t) => {
  for (const mode of MODES) t.strictSame(planEpochs([], mode), [], mode)
  t.end()
})

t.test('the planner keeps source order and every call exactly once, and passes calls through unchanged', (t) => {
  const input = calls(['Wa', 'Ra', 'Rp', 'Ws', 'Wp', 'Ra', 'Rs', 'Wa'])
  for (const mode of MODES) {
    const flat = planEpochs(input, mode).flat()
    t.strictSame(flat.map((c) => c.index), input.map((c) => c.index), mode)
    t.ok(flat.every((c, i) => c === input[i]), `${mode}: same call objects`)
  }
  t.end()
})

t.test('conflict keys do not affect planning: they only order calls inside an epoch', (t) => {
  const input = calls(['Ra', 'Ra', 'Ra']).map((c) => ({ ...c, conflictKey: 'same' }))
  t.strictSame(planEpochs(input, 'safeParallel').map((e) => e.map((c) => c.id)), [['c0', 'c1', 'c2']])
  t.end()
})

t.test('rejected calls are simply absent: the calls around them still group by eligibility', (t) => {
  // Source positions 0, 2 and 3 survived preparation; 1 was rejected.
  const all = calls(['Ra', 'Wa', 'Ra', 'Ra'])
  const prepared = [all[0]!, all[2]!, all[3]!]
  t.strictSame(planEpochs(prepared, 'safeParallel').map((e) => e.map((c) => c.index)), [[0, 2, 3]])
  t.end()
})
