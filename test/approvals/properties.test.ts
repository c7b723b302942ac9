/**
 * Property cases: approval-required calls mixed into random batches, decided
 * in random order and chunks. No call is dispatched before the last decision,
 * denied calls never reach an executor, and what runs after approval runs in
 * the epochs, with the conflict keys and operation ids, that the same calls
 * (with the approvers' edits) get in a batch that needed no approval.
 */
import fc from 'fast-check'
import t from 'tap'
import { post, tool } from '../helper.js'
import { approvalApp, decide, newRun } from './helpers.js'
import { seeded } from '../seed.js'

type Choice = 'approve' | 'deny' | 'edit'
interface Spec { tool: 'look' | 'note' | 'mail' | 'pay' | 'nope', k: string, choice: Choice, edit: string }

const callArb = fc.record({
  tool: fc.constantFrom('look', 'note', 'mail', 'pay', 'nope') as fc.Arbitrary<Spec['tool']>,
  k: fc.constantFrom('a', 'b', 'c'),
  choice: fc.constantFrom('approve', 'deny', 'edit') as fc.Arbitrary<Choice>,
  edit: fc.constantFrom('a', 'b', 'c', 'd')
})
const caseArb = fc.record({
  calls: fc.array(callArb, { minLength: 1, maxLength: 8 }),
  mode: fc.constantFrom('sequential', 'safeParallel', 'parallel'),
  order: fc.array(fc.nat(), { maxLength: 8 }),
  chunk: fc.integer({ min: 1, max: 3 })
})

const held = (s: Spec): boolean => s.tool === 'mail' || s.tool === 'pay'

t.test('approval-required calls mixed into random batches', async (t) => {
  const tools = (url: string, approval: boolean) => [
    tool('look', url, { readOnly: true }),
    tool('note', url, { conflictKey: 'k:{/k}' }),
    tool('mail', url, { requiresApproval: approval, conflictKey: 'k:{/k}', execution: 'parallel' }),
    tool('pay', url, { requiresApproval: approval, action: {}, conflictKey: 'k:{/k}' })
  ]
  const gated = await approvalApp(t, { tools: (url) => tools(url, true) })
  const plain = await approvalApp(t, { tools: (url) => tools(url, false) })
  for (const { ex } of [gated, plain]) ex.on('pay', () => ({ status: 'committed', result: { paid: true } }))
  const limits = { exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 0 }
  let cases = 0
  let heldCases = 0

  await fc.assert(fc.asyncProperty(caseArb, async ({ calls, mode, order, chunk }) => {
    cases++
    const { app, ex } = gated
    const runId = await newRun(app, { toolExecution: mode, limits })
    const body = { batchId: 'b', calls: calls.map((s, i) => ({ id: `c${i}`, name: s.tool, arguments: { k: s.k, x: i } })) }
    const first = await post(app, `/v1/runs/${runId}/batches`, body)
    const sentFor = () => ex.calls.filter((c) => c.runId === runId)
    const heldIdx = calls.flatMap((s, i) => (held(s) ? [i] : []))
    let final = first
    if (heldIdx.length > 0) {
      heldCases++
      if (first.status !== 202) throw new Error(`expected 202, got ${first.status}`)
      // The held calls, decided in a random order, a few per request.
      const pending = [...heldIdx]
      const decided: number[] = []
      for (const n of order) if (pending.length > 1) decided.push(pending.splice(n % pending.length, 1)[0]!)
      decided.push(...pending)
      for (let i = 0; i < decided.length; i += chunk) {
        if (sentFor().length !== 0) throw new Error('a call was dispatched before the last decision')
        const decisions = decided.slice(i, i + chunk).map((j) => {
          const s = calls[j]!
          if (s.choice === 'deny') return { callId: `c${j}`, approve: false, reason: 'no' }
          if (s.choice === 'edit') return { callId: `c${j}`, approve: true, arguments: { k: s.edit, x: j } }
          return { callId: `c${j}`, approve: true }
        })
        final = await decide(app, runId, 'b', decisions)
        const last = i + chunk >= decided.length
        if (final.status !== (last ? 200 : 202)) throw new Error(`decision answered ${final.status}: ${JSON.stringify(final.body)}`)
      }
    } else if (first.status !== 200) {
      throw new Error(`expected 200 without held calls, got ${first.status}`)
    }
    const results = final.body.results as any[]
    if (results.length !== calls.length) throw new Error('one result per call')
    // Denied calls never reach an executor; every other prepared call ran once.
    const sent = sentFor()
    for (const [i, s] of calls.entries()) {
      const r = results[i]
      const denied = held(s) && s.choice === 'deny'
      const reached = sent.filter((c) => c.callId === `c${i}`).length
      if (s.tool === 'nope') { if (r.status !== 'rejected' || reached !== 0) throw new Error('unknown tool ran'); continue }
      if (denied) { if (r.status !== 'denied' || reached !== 0) throw new Error(`denied call c${i} reached the executor (${r.status})`); continue }
      if (r.status !== 'ok' || reached !== 1) throw new Error(`c${i} should have run once: ${r.status}, ${reached}`)
      const args = sent.find((c) => c.callId === `c${i}`)!.arguments
      const k = held(s) && s.choice === 'edit' ? s.edit : s.k
      if (args.k !== k) throw new Error(`c${i} ran with ${JSON.stringify(args)}, not the approved arguments`)
    }
    // The same calls, as approved, in a batch that needs no approval: the same epochs; the same operation ids for actions.
    const reference = { batchId: 'b', calls: calls.map((s, i) => ({ id: `c${i}`, name: held(s) && s.choice === 'deny' ? 'nope' : s.tool, arguments: { k: held(s) && s.choice === 'edit' ? s.edit : s.k, x: i } })) }
    const refRun = await newRun(plain.app, { runId: `${runId}-ref`, toolExecution: mode, limits })
    const ref = await post(plain.app, `/v1/runs/${refRun}/batches`, reference)
    for (const [i, r] of results.entries()) {
      if (r.status !== 'ok') continue
      if (r.details.epoch !== ref.body.results[i].details.epoch) throw new Error(`c${i} ran in epoch ${r.details.epoch}, ${ref.body.results[i].details.epoch} without approval`)
    }
    // Calls sharing a conflict key never overlapped; an action went out under its receipt's operation id.
    const ran = sent.filter((c) => c.endedAt !== null)
    for (const x of ran) {
      for (const y of ran) {
        if (x === y || x.arguments.k !== y.arguments.k || x.tool === 'look' || y.tool === 'look') continue
        if (x.startedAt < y.startedAt && y.startedAt < x.endedAt!) throw new Error(`c${x.callId} and ${y.callId} overlapped on key ${String(x.arguments.k)}`)
      }
    }
    for (const [i, s] of calls.entries()) {
      if (s.tool !== 'pay' || results[i].status !== 'ok') continue
      const receipt = results[i].details.receipt
      const call = sent.find((c) => c.callId === `c${i}`)!
      if (call.idempotencyKey !== receipt.operationId) throw new Error('the action was not sent under its operation id')
      if (!receipt.timeline.some((e: any) => e.event === 'approved')) throw new Error('an approved action has no approved event')
    }
    // Resending the batch replays its answer and dispatches nothing again.
    const before = sentFor().length
    const replay = await post(app, `/v1/runs/${runId}/batches`, body)
    if (replay.status !== 200 || JSON.stringify(replay.body) !== JSON.stringify(final.body) || sentFor().length !== before) throw new Error('the resend did not replay')
  }), seeded(t, { numRuns: 30 }))
  t.equal(cases, 30)
  t.ok(heldCases > 10, `${heldCases} of the cases held calls for approval`)
})
