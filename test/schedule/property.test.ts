/**
 * Property-based tests of the epoch scheduler through the whole app: random
 * batches against a real executor on port 0 that records each call's start
 * and end. The assertions are on that record (and on the lifecycle events,
 * whose `seq` is the real order inside toolgate), never on durations.
 *
 * One app and one executor serve every case; each case has a run of its own.
 */
import t from 'tap'
import fc from 'fast-check'
import type { FastifyReply } from 'fastify'
import { buildTestApp, post, startExecutor, tool, type ExecutorCall } from '../helper.js'
import type { BatchResponse, CallResult } from '../../src/model/result.js'
import type { ExecutionHint, ToolDefinition } from '../../src/model/tool.js'
import type { ToolExecutionMode } from '../../src/model/run.js'
import { waitFor } from './harness.js'
import { runs, seeded } from '../seed.js'

/** How many random batches each property runs (at least 1,000 in all). */
/** Batches per property: the suite's counts, the full ones with TOOLGATE_TEST_RUNS=full (test/seed.ts), or PROP_RUNS for each. */
const RUNS = { plain: Number(process.env.PROP_RUNS ?? runs(150, 600)), uncertain: Number(process.env.PROP_RUNS ?? runs(60, 200)), cancelled: Number(process.env.PROP_RUNS ?? runs(100, 400)) }
/** The executor timeout of the tools a `timeout` fault uses; every other answer comes well within it. */
const SHORT_TIMEOUT_MS = 40
const KEYS = ['a', 'b', 'c'] as const

type Fault = 'none' | '500' | 'timeout' | 'destroy'

interface CallSpec {
  read: boolean
  execution: ExecutionHint
  keyed: boolean
  key: (typeof KEYS)[number]
  /** Executor latency before answering, in ms. */
  lat: number
  fault: Fault
  /** Refused by preparation (unknown tool or unresolvable key): takes no part in epochs. */
  reject: 'no' | 'unknown_tool' | 'conflict_key_unresolved'
}

interface CaseSpec {
  mode: ToolExecutionMode
  cap: number
  calls: CallSpec[]
  /** Cancel once the executor has received `afterCalls` calls of the run (0: from the start), after `delay` ms. */
  cancel: { afterCalls: number, delay: number } | null
}

function toolName (c: Pick<CallSpec, 'read' | 'execution' | 'keyed'>, short: boolean): string {
  return `${c.read ? 'r' : 'w'}-${c.execution}-${c.keyed ? 'k' : 'n'}${short ? '-t' : ''}`
}

// Every scheduling kind of tool, twice: a normal one and one with a short executor timeout.
function allTools (url: string): ToolDefinition[] {
  const out: ToolDefinition[] = []
  for (const read of [true, false]) {
    for (const execution of ['auto', 'parallel', 'sequential'] as const) {
      for (const keyed of [true, false]) {
        for (const short of [false, true]) {
          out.push(tool(toolName({ read, execution, keyed }, short), url, {
            readOnly: read,
            execution,
            inputSchema: { type: 'object', properties: { n: { type: 'integer' }, k: { type: 'string' }, lat: { type: 'integer' }, fault: { type: 'string' } } },
            executor: { url: `${url}/tools/${toolName({ read, execution, keyed }, short)}`, timeoutMs: short ? SHORT_TIMEOUT_MS : 10_000 },
            ...(keyed ? { conflictKey: 'key:{/k}' } : {})
          }))
        }
      }
    }
  }
  return out
}

const callArb: fc.Arbitrary<CallSpec> = fc.record({
  read: fc.boolean(),
  execution: fc.oneof({ arbitrary: fc.constant('auto' as const), weight: 3 }, { arbitrary: fc.constant('parallel' as const), weight: 1 }, { arbitrary: fc.constant('sequential' as const), weight: 1 }),
  keyed: fc.boolean(),
  key: fc.constantFrom(...KEYS),
  lat: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 8 })),
  fault: fc.oneof(
    { arbitrary: fc.constant<Fault>('none'), weight: 16 },
    { arbitrary: fc.constant<Fault>('500'), weight: 2 },
    { arbitrary: fc.constant<Fault>('destroy'), weight: 2 },
    { arbitrary: fc.constant<Fault>('timeout'), weight: 1 }
  ),
  reject: fc.oneof(
    { arbitrary: fc.constant('no' as const), weight: 28 },
    { arbitrary: fc.constant('unknown_tool' as const), weight: 1 },
    { arbitrary: fc.constant('conflict_key_unresolved' as const), weight: 1 }
  )
}).map((c) => c.reject === 'conflict_key_unresolved' ? { ...c, keyed: true } : c)

const caseArb = (cancel: fc.Arbitrary<CaseSpec['cancel']>): fc.Arbitrary<CaseSpec> => fc.record({
  mode: fc.constantFrom<ToolExecutionMode>('sequential', 'safeParallel', 'parallel'),
  cap: fc.integer({ min: 1, max: 8 }),
  calls: fc.array(callArb, { minLength: 1, maxLength: 10 }),
  cancel
})

/**
 * Overlapping writes, few keys, many faults: the batches where uncertain
 * writes meet writes that wait for a key or a slot, so blocking is exercised
 * hard (who blocks whom, and the source-order rule).
 */
const uncertainCaseArb: fc.Arbitrary<CaseSpec> = fc.record({
  mode: fc.constant<ToolExecutionMode>('parallel'),
  cap: fc.integer({ min: 2, max: 4 }),
  calls: fc.array(fc.record({
    read: fc.oneof({ arbitrary: fc.constant(false), weight: 4 }, { arbitrary: fc.constant(true), weight: 1 }),
    execution: fc.constant<ExecutionHint>('auto'),
    keyed: fc.boolean(),
    key: fc.constantFrom('a', 'b'),
    lat: fc.integer({ min: 0, max: 8 }),
    fault: fc.constantFrom<Fault>('none', 'none', '500', 'destroy'),
    reject: fc.constant('no' as const)
  }), { minLength: 3, maxLength: 8 }),
  cancel: fc.constant(null)
})

// --- the app, the executor, and what each call does there -----------------

const ex = await startExecutor(t)
const { app } = await buildTestApp(t, { tools: allTools(ex.url), config: { logLevel: 'warn' } })

/** The cancellation of the case in progress, started by the executor on the chosen call. */
let onArrival: ((call: ExecutorCall) => void) | null = null

async function behaviour (call: ExecutorCall, _req: unknown, reply: FastifyReply): Promise<unknown> {
  onArrival?.(call)
  const { lat, fault } = call.arguments as { lat: number, fault: Fault }
  if (lat > 0) await new Promise((resolve) => setTimeout(resolve, lat))
  switch (fault) {
    case '500':
      return reply.code(500).send({ error: 'boom' })
    case 'destroy':
      reply.raw.destroy()
      return undefined
    case 'timeout':
      // Headers and half a body, then nothing: toolgate gives up after the tool's timeoutMs.
      // The executor's part ends here, so its record ends before toolgate moves on.
      reply.hijack()
      reply.raw.writeHead(200, { 'content-type': 'application/json', 'content-length': '64' })
      reply.raw.write('{"content":')
      return undefined
    default:
      return { content: `done ${call.callId}` }
  }
}
for (const def of allTools(ex.url)) ex.on(def.name, behaviour)

// --- running one case -----------------------------------------------------

interface Outcome {
  status: number
  body: BatchResponse & { code?: string }
  records: Map<number, ExecutorCall>
  /** When the cancel request was answered: epoch ms and performance.now(). */
  ack: { date: number, perf: number } | null
}

let caseNo = 0

async function runCase (spec: CaseSpec): Promise<Outcome> {
  const runId = `prop-${++caseNo}`
  const created = await post(app, '/v1/runs', {
    runId,
    toolExecution: spec.mode,
    maxConcurrentTools: spec.cap,
    events: 'lifecycle',
    limits: { exactToolRepeatAdvisoryThreshold: 0, exactToolRepeatTerminationThreshold: 0, cycleAdvisoryRepetitions: 0, cycleTerminationRepetitions: 0, consecutiveErrorAdvisory: 0, consecutiveErrorTermination: 0, noProgressAdvisory: 0, noProgressTermination: 0 }
  })
  if (created.status !== 201) throw new Error(`run creation failed: ${JSON.stringify(created.body)}`)

  let ack: Outcome['ack'] = null
  let cancelling: Promise<void> | null = null
  const cancel = (delay: number): void => {
    cancelling ??= new Promise<void>((resolve) => setTimeout(resolve, delay))
      .then(() => post(app, `/v1/runs/${runId}/cancel`, {}))
      .then((res) => {
        if (res.status !== 200) throw new Error(`cancel failed: ${JSON.stringify(res.body)}`)
        ack = { date: Date.now(), perf: performance.now() }
      })
  }
  let arrivals = 0
  onArrival = (call) => {
    if (call.runId !== runId || spec.cancel === null) return
    if (++arrivals === spec.cancel.afterCalls) cancel(spec.cancel.delay)
  }

  const calls = spec.calls.map((c, n) => {
    const name = c.reject === 'unknown_tool' ? 'no-such-tool' : toolName(c, c.fault === 'timeout')
    const args: Record<string, unknown> = { n, lat: c.lat, fault: c.fault }
    if (c.keyed && c.reject !== 'conflict_key_unresolved') args.k = c.key
    return { id: `c${n}`, name, arguments: args }
  })
  const batch = post(app, `/v1/runs/${runId}/batches`, { calls })
  if (spec.cancel?.afterCalls === 0) cancel(spec.cancel.delay)
  const res = await batch
  await cancelling
  onArrival = null

  const mine = (): ExecutorCall[] => ex.calls.filter((c) => c.runId === runId)
  // A call toolgate gave up on may still be inside the executor's handler.
  await waitFor(() => mine().every((c) => c.endedAt !== null), 'the executor to finish every call')
  const records = new Map<number, ExecutorCall>()
  for (const r of mine()) {
    const index = Number(r.callId.slice(1))
    if (records.has(index)) throw new Error(`${r.callId} reached the executor twice`)
    records.set(index, r)
  }
  return { status: res.status, body: res.body, records, ack }
}

// --- the properties -------------------------------------------------------

/** Independent oracle of SPEC section 5, "Epochs": epoch index per call, null for rejected calls. */
function expectedEpochs (spec: CaseSpec): Array<number | null> {
  let epoch = -1
  let open = false
  return spec.calls.map((c) => {
    if (c.reject !== 'no') return null
    const eligible = spec.mode === 'parallel'
      ? c.execution !== 'sequential'
      : spec.mode === 'safeParallel' && c.execution !== 'sequential' && (c.read || c.execution === 'parallel')
    if (!eligible || !open) epoch++
    open = eligible
    return epoch
  })
}

const RAN = new Set(['ok', 'error', 'uncertain'])

function check (spec: CaseSpec, o: Outcome): void {
  const fail = (msg: string): never => { throw new Error(msg) }
  const ids = spec.calls.map((_, n) => `c${n}`)
  const keyOf = (n: number): string | null => spec.calls[n]!.keyed ? spec.calls[n]!.key : null
  const overlaps = (a: ExecutorCall, b: ExecutorCall): boolean => a.startedAt < b.endedAt! && b.startedAt < a.endedAt!
  const records = [...o.records.entries()]

  if (o.status === 409) {
    // The cancel landed before the batch began.
    if (o.body.code !== 'run_not_active' || spec.cancel === null) fail(`unexpected 409: ${JSON.stringify(o.body)}`)
    if (records.length > 0) fail('a batch refused as not active reached the executor')
    return
  }
  if (o.status !== 200) fail(`status ${o.status}: ${JSON.stringify(o.body)}`)
  const results = o.body.results

  // Every call has exactly one result, in source order.
  if (JSON.stringify(results.map((r) => r.callId)) !== JSON.stringify(ids)) fail(`results out of source order: ${results.map((r) => r.callId).join(',')}`)

  // Epochs are as SPEC section 5 defines them; rejected calls take no part.
  const epochs = expectedEpochs(spec)
  if (results.some((r) => r.status === 'cancelled' && r.details.epoch === undefined)) {
    // Cancelled before admission: nothing was planned, every call is cancelled.
    if (o.ack === null || !results.every((r) => r.status === 'cancelled' && r.details.epoch === undefined)) fail(`cancelled before planning, partly: ${JSON.stringify(results)}`)
    if (records.length > 0) fail('a batch cancelled before planning reached the executor')
    return
  }
  for (const [n, r] of results.entries()) {
    const want = epochs[n]
    if (want === null) {
      if (r.status !== 'rejected' || r.details.reason !== spec.calls[n]!.reject) fail(`c${n} should be rejected: ${JSON.stringify(r)}`)
    } else if (r.details.epoch !== want) {
      fail(`c${n} is in epoch ${String(r.details.epoch)}, expected ${want}`)
    }
  }

  // Only calls that ran reached the executor (no blocked, cancelled or rejected one), each at most once;
  // a call that answered ok did reach it.
  for (const [n, r] of results.entries()) {
    if (o.records.has(n) && !RAN.has(r.status)) fail(`c${n} is ${r.status} but reached the executor`)
    if (r.status === 'ok' && !o.records.has(n)) fail(`c${n} is ok but never reached the executor`)
  }

  // Outcomes follow the executor's behaviour: a fault makes a write uncertain and a read an error.
  for (const [n, r] of results.entries()) {
    if (!RAN.has(r.status)) continue
    const c = spec.calls[n]!
    const want = c.fault === 'none' ? 'ok' : c.read ? 'error' : 'uncertain'
    if (r.status !== want) fail(`c${n} (${c.read ? 'read' : 'write'}, fault ${c.fault}) is ${r.status}, expected ${want}`)
  }

  // On the executor's record: same-key calls never overlapped and ran in source order.
  for (const [i, a] of records) {
    for (const [j, b] of records) {
      if (i < j && keyOf(i) !== null && keyOf(i) === keyOf(j) && a.endedAt! > b.startedAt) fail(`c${i} and c${j} share key ${keyOf(i)!} but overlapped or ran out of order`)
    }
  }

  // A barrier overlapped nothing; epoch k+1 started after every call of epoch k ended.
  const size = new Map<number, number>()
  for (const e of epochs) if (e !== null) size.set(e, (size.get(e) ?? 0) + 1)
  for (const [i, a] of records) {
    for (const [j, b] of records) {
      if (i === j) continue
      const ei = epochs[i]!
      const ej = epochs[j]!
      if (size.get(ei) === 1 && overlaps(a, b)) fail(`barrier c${i} overlapped c${j}`)
      if (ei < ej && a.endedAt! > b.startedAt) fail(`c${j} (epoch ${ej}) started before c${i} (epoch ${ei}) ended`)
    }
  }

  // Concurrency never passed the cap.
  const edges = records.flatMap(([, r]) => [[r.startedAt, 1], [r.endedAt!, -1]] as const)
    .sort((x, y) => x[0] - y[0] || x[1] - y[1])
  let running = 0
  for (const [, d] of edges) {
    running += d
    if (running > spec.cap) fail(`${running} calls ran at once, cap ${spec.cap}`)
  }

  checkEvents(spec, o, results, fail)
  checkCancellation(spec, o, results, epochs, fail)
}

/** What the lifecycle events (real order, by seq) show about blocking, order and work conservation. */
function checkEvents (spec: CaseSpec, o: Outcome, results: CallResult[], fail: (msg: string) => never): void {
  const index = (callId: string | undefined): number => Number(callId?.slice(1))
  const events = o.body.events
  const startSeq = new Map<number, number>()
  const endSeq = new Map<number, number>()
  for (const e of events) {
    if (e.type === 'call.started') startSeq.set(index(e.callId), e.seq)
    if (e.type === 'call.completed') endSeq.set(index(e.callId), e.seq)
  }
  const epochOf = (n: number): number | undefined => results[n]!.details.epoch
  const key = (n: number): string | null => spec.calls[n]!.keyed ? spec.calls[n]!.key : null
  const isWrite = (n: number): boolean => !spec.calls[n]!.read
  const uncertain = results.map((r, n) => r.status === 'uncertain' ? n : -1).filter((n) => n >= 0)
  // An uncertain write applies to a later write with its key, or to every later write when it has none.
  const applies = (u: number, w: number): boolean => u < w && isWrite(w) && (key(u) === null || key(u) === key(w))

  for (const [w, r] of results.entries()) {
    if (r.status === 'blocked') {
      if (!isWrite(w)) fail(`read c${w} was blocked`)
      const by = index(r.details.blockedBy)
      if (!uncertain.includes(by) || !applies(by, w)) fail(`c${w} blocked by c${by}, which does not apply to it`)
      // blockedBy is the earliest uncertain write that applied when c${w} came up; any earlier one
      // that had completed before c${by} had certainly completed by then.
      for (const u of uncertain) {
        if (u < by && applies(u, w) && endSeq.get(u)! < endSeq.get(by)!) fail(`c${w} names c${by} but c${u} blocked it earlier`)
      }
    }
    if (startSeq.has(w)) {
      // A write that started did so before any applicable uncertain write had settled.
      for (const u of uncertain) {
        if (applies(u, w) && endSeq.get(u)! < startSeq.get(w)!) fail(`c${w} started after c${u} became uncertain`)
      }
    }
  }

  // Inside an epoch, an unkeyed call is never overtaken by a later call: it can only wait for a slot.
  for (const [a, sa] of startSeq) {
    for (const [b, sb] of startSeq) {
      if (a < b && key(a) === null && epochOf(a) === epochOf(b) && sb < sa) fail(`c${b} started before c${a}, which had no key to wait for`)
    }
  }

  // Work conserving (only checked without cancellation, which legitimately leaves slots empty):
  // after each burst of starts, a free slot means every call still waiting waits for its key.
  if (o.ack !== null) return
  const runningNow = new Set<number>()
  const startedSoFar = new Set<number>()
  let epoch = -1
  const checkpoint = (at: number): void => {
    if (runningNow.size >= spec.cap) return
    const heldKeys = new Set([...runningNow].map(key).filter((k) => k !== null))
    for (const [n, r] of results.entries()) {
      if (epochOf(n) !== epoch || startedSoFar.has(n) || r.status === 'blocked' || r.status === 'rejected') continue
      const k = key(n)
      if (k === null || !heldKeys.has(k)) fail(`slot idle at seq ${at} while c${n} could start`)
    }
  }
  for (const e of events) {
    if (e.type === 'call.completed' || e.type === 'epoch.settled') checkpoint(e.seq)
    if (e.type === 'epoch.started') epoch = e.epoch!
    if (e.type === 'call.started') {
      runningNow.add(index(e.callId))
      startedSoFar.add(index(e.callId))
      if (runningNow.size > spec.cap) fail(`more than ${spec.cap} calls started`)
    }
    if (e.type === 'call.completed') runningNow.delete(index(e.callId))
  }
}

/** Nothing started after the cancel was acknowledged, and a cancellation never starts a later epoch. */
function checkCancellation (spec: CaseSpec, o: Outcome, results: CallResult[], epochs: Array<number | null>, fail: (msg: string) => never): void {
  const cancelledAt = results.map((r, n) => r.status === 'cancelled' ? epochs[n]! : Infinity)
  const firstCancelled = Math.min(...cancelledAt)
  const ack = o.ack
  if (ack === null) {
    // No cancel was sent (the chosen call never came).
    if (firstCancelled !== Infinity) fail('a call was cancelled with no cancellation')
    return
  }
  for (const [n, r] of results.entries()) {
    if (r.status === 'cancelled' && r.details.reason !== 'cancelled') fail(`c${n} cancelled for ${String(r.details.reason)}`)
    if (epochs[n] !== null && epochs[n]! > firstCancelled && r.status !== 'cancelled') fail(`c${n} (epoch ${epochs[n]!}) is ${r.status} after epoch ${firstCancelled} was cancelled`)
  }
  for (const [n, rec] of o.records) {
    // A request toolgate sent before the cancel may reach the executor just after the answer;
    // toolgate itself must have started it before.
    if (rec.startedAt > ack.perf && Date.parse(results[n]!.details.startedAt!) > ack.date) fail(`c${n} started after the cancel was acknowledged`)
  }
}

// --- the runs ---------------------------------------------------------------

/** Runs one property and says what its batches exercised, so a generator that drifts shows. */
async function property (t: { pass: (message: string) => unknown, comment: (message: string) => void }, arb: fc.Arbitrary<CaseSpec>, numRuns: number): Promise<void> {
  const t0 = performance.now()
  const seen = new Map<string, number>()
  await fc.assert(fc.asyncProperty(arb, async (spec) => {
    const outcome = await runCase(spec)
    check(spec, outcome)
    const statuses = new Set(outcome.status === 200 ? outcome.body.results.map((r) => r.status) : ['refused'])
    for (const s of statuses) seen.set(s, (seen.get(s) ?? 0) + 1)
  }), seeded(t, { numRuns }))
  const mix = [...seen].sort().map(([s, n]) => `${s} ${n}`).join(', ')
  t.pass(`${numRuns} random batches in ${Math.round(performance.now() - t0)} ms; batches with a call ${mix}`)
}

t.test('random batches keep every scheduling guarantee on the executor\'s record', async (t) => {
  await property(t, caseArb(fc.constant(null)), RUNS.plain)
})

t.test('random batches full of uncertain writes block exactly the writes SPEC section 5 names', async (t) => {
  await property(t, uncertainCaseArb, RUNS.uncertain)
})

t.test('random batches cancelled at random points start nothing after the cancel and no later epoch', async (t) => {
  await property(t, caseArb(fc.record({ afterCalls: fc.integer({ min: 0, max: 4 }), delay: fc.integer({ min: 0, max: 4 }) })), RUNS.cancelled)
})
