/**
 * A retry-safety soak (SPEC section 14), bounded in count: a scripted model
 * runs many turns over non-idempotent and idempotent write tools and reads,
 * and always sends again, under new call ids, every call whose result was not
 * ok. The executor applies a write, then fails to say so (a timeout, a 5xx, a
 * dropped connection) by a seeded schedule, or refuses it outright (a 4xx).
 *
 * The executor keeps its side of docs/retries.md ("What the executor should
 * do"), since toolgate's promise is made against such an executor: an
 * idempotent tool's executor answers a repeated Idempotency-Key with the
 * key's first outcome, a refusal included, and the status endpoint's
 * definitive answer is final (an operation it answered `failed` is refused
 * if it arrives after all). Both matter because a send toolgate gave up on
 * can reach the executor late: on a loaded machine a request written just
 * before its tool's timeout has been seen to reach the handler a whole turn
 * later, after the model's re-send (docs/retries.md, "A send that arrives late").
 *
 * Each application is recorded, in order, by the write's effect identity
 * (tool and canonical arguments), and so is each definitive answer of the
 * status endpoint. No write may be applied while an earlier send of it is
 * unresolved; without a status endpoint none may be applied twice; an
 * idempotent tool's retry must carry the original Idempotency-Key until
 * something resolved it (the status endpoint, or a definitive answer to a
 * retry under that key). A re-send after the earlier send was found
 * committed is, by SPEC section 14, a new call the model chose to make:
 * counted and printed, not asserted. Run with and without a status
 * endpoint. A violation prints the write's history (sends, answers, status
 * answers, in order). TOOLGATE_TEST_SEED replays a failing seed:
 * every decision is keyed by what it is about (a run's call, an operation's
 * n-th status question), so the run without a status endpoint replays
 * exactly; with one, when recovery answers is real time, so a replay may
 * differ in its counts but not in what it exercises.
 */
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, sleep, startExecutor, tool, type ExecutorCall } from '../helper.js'
import { metric, startStatusServer } from '../retry/support.js'
import { SEED, SEED_VARIABLE } from '../seed.js'
import { keyed, random } from './seeded.js'

const RUNS = 8
const TURNS = 30
/** Short, so an injected timeout costs little; the executor answers such a call later than this. */
const TOOL_TIMEOUT_MS = 120
const NO_LOOP_LIMITS = { exactToolRepeatTerminationThreshold: 0, cycleTerminationRepetitions: 0, consecutiveErrorTermination: 0, noProgressTermination: 0 }

const WRITES = ['pay', 'order', 'put', 'charge'] as const
type Write = typeof WRITES[number]
const IDEMPOTENT = new Set<string>(['put', 'charge'])
const ACTION = new Set<string>(['order', 'charge'])

type Fault = 'fine' | 'timeout' | 'http5xx' | 'drop' | 'http4xx'
/** Faults after applying make the outcome unknown; a 4xx refuses without applying. */
const FAULTS: Array<[Fault, number]> = [['fine', 0.55], ['timeout', 0.1], ['http5xx', 0.12], ['drop', 0.11], ['http4xx', 0.12]]

interface Intent { id: number, tool: Write, args: { k: string, x: number }, done: boolean, sends: number, uncertainOps: Set<string> }

/** What the soak knows of an operation's resolution, outside toolgate. */
interface Resolutions {
  /** The status endpoint answered it definitively (toolgate resolves it after that). */
  byStatus: (operationId: string) => boolean
  /** A retry under its key got a definitive answer: toolgate resolved it in that batch. */
  byRetry: Set<string>
}

export interface SoakFigures {
  turns: number
  calls: number
  faults: Record<Fault, number>
  statusAnswers: number
  applied: number
  duplicates: number
  /** Applied again while the earlier send's uncertainty was unresolved: what toolgate must never let through. */
  duplicatesWhileUnresolved: number
  /** Applied again after the status endpoint had found the earlier send committed: the model's choice. */
  resendsAfterCommitted: number
  keyMismatches: number
  /** Sends of an operation the status endpoint had answered failed (a first send arriving late, or a retry racing the resolution): refused, never applied. */
  lateRefused: number
  /** Repeated Idempotency-Keys answered with the key's first outcome, a refusal. */
  repeatedRefusals: number
  blockedRetries: number
  blockedReads: number
  strayBlocks: number
  resolved: Record<string, number>
  stillOpen: number
}

const seed = SEED
t.comment(`random seed ${seed} (replay with ${SEED_VARIABLE}=${seed})`)

for (const withStatusUrl of [false, true]) {
  t.test(`a model that always retries what failed applies no write while its earlier send is unresolved (${withStatusUrl ? 'with' : 'without'} a status URL)`, async (t) => {
    const figures = await soak(t, seed + (withStatusUrl ? 1 : 0), withStatusUrl)
    t.comment(`figures ${JSON.stringify(figures)}`)
    t.comment(`re-sends after a committed resolution that applied a write again: ${figures.resendsAfterCommitted}`)
    t.equal(figures.duplicatesWhileUnresolved, 0, 'no write applied while an earlier send of it was unresolved')
    if (!withStatusUrl) t.equal(figures.duplicates, 0, 'without a status endpoint nothing resolves a plain write: none applied twice')
    t.equal(figures.keyMismatches, 0, "every idempotent retry carried the original operation's Idempotency-Key")
    t.equal(figures.blockedReads, 0, 'reads are never blocked')
    t.equal(figures.strayBlocks, 0, 'every block names an earlier uncertain send of the same write')
    t.ok(figures.faults.timeout + figures.faults.http5xx + figures.faults.drop > 0, 'faults after applying were injected')
    t.ok(figures.blockedRetries > 0, 'retries of uncertain non-idempotent writes were blocked')
    t.ok(figures.resolved.idempotent_retry! > 0, 'idempotent retries resolved uncertainties')
    if (withStatusUrl) t.ok(figures.resolved.status_url! > 0, 'the status URL resolved uncertainties')
  })
}

async function soak (t: Test, seed: number, withStatusUrl: boolean): Promise<SoakFigures> {
  const draw = keyed(seed)
  const pickBy = <T>(key: string, items: readonly T[]): T => items[Math.floor(draw(key) * items.length)]!
  const roll = (key: string): Fault => {
    let r = draw(key)
    for (const [name, p] of FAULTS) {
      if (r < p) return name
      r -= p
    }
    return 'fine'
  }

  // ---- the executor: applies, then maybe fails to say so ----
  const ex = await startExecutor(t)
  const faults: Record<Fault, number> = { fine: 0, timeout: 0, http5xx: 0, drop: 0, http4xx: 0 }
  /** One order for applications and status answers, both in this process. */
  let seq = 0
  /** Applications by effect identity, in order. */
  const applications = new Map<string, Array<{ operationId: string, seq: number }>>()
  /** When the status endpoint first answered an operation definitively: toolgate resolves it after that. */
  const answeredAt = new Map<string, number>()
  /** Operation ids whose write was applied (what the status endpoint knows). */
  const appliedOps = new Set<string>()
  /** Operation ids the status endpoint answered `failed`: a definitive answer is final, so they are never applied afterwards. */
  const fenced = new Set<string>()
  /** An idempotent executor's first outcome, by Idempotency-Key: the applied answer, or the refusal. */
  const byKey = new Map<string, { refused: number } | { answer: unknown }>()
  let lateRefused = 0
  let repeatedRefusals = 0
  /** Each write's history by its `k`, printed when it breaks a rule. */
  const history = new Map<string, string[]>()
  const note = (k: unknown, line: string): void => { history.set(String(k), [...(history.get(String(k)) ?? []), `${seq} ${line}`]) }
  const byOp = new Map<string, string>()
  const identity = (c: ExecutorCall): string => `${c.runId}|${c.tool}|${JSON.stringify(c.arguments, Object.keys(c.arguments).sort())}`
  const refusal = (c: ExecutorCall, reply: { code: (n: number) => { send: (b: unknown) => unknown } }, code: number): unknown =>
    reply.code(code).send(ACTION.has(c.tool) ? { result: { refused: true } } : { content: 'refused' })
  const behave = async (c: ExecutorCall, req: { raw: { socket: { destroy: () => void } } }, reply: { code: (n: number) => { send: (b: unknown) => unknown } }): Promise<unknown> => {
    byOp.set(c.operationId, String(c.arguments.k))
    const first = IDEMPOTENT.has(c.tool) ? byKey.get(c.idempotencyKey!) : undefined
    const key = `${c.runId}|${c.callId}`
    let fault = roll(key)
    // A repeated key was applied (or refused) already: it gets its first outcome, so only the answer can fail now, never be a new refusal.
    if (first !== undefined && fault === 'http4xx') fault = 'fine'
    faults[fault]++
    if (fenced.has(c.operationId)) {
      lateRefused++
      note(c.arguments.k, `arrived ${c.callId} key ${c.idempotencyKey} after the status endpoint answered it failed: refused`)
      return refusal(c, reply, 409)
    }
    if (first !== undefined && 'refused' in first) {
      repeatedRefusals++
      note(c.arguments.k, `arrived ${c.callId} key ${c.idempotencyKey}: refused again, as first`)
      return refusal(c, reply, first.refused)
    }
    if (fault === 'http4xx') {
      const code = pickBy(`${key}|code`, [409, 422])
      if (IDEMPOTENT.has(c.tool)) byKey.set(c.idempotencyKey!, { refused: code })
      note(c.arguments.k, `arrived ${c.callId} key ${c.idempotencyKey}: refused`)
      return refusal(c, reply, code)
    }
    let answer = first === undefined ? undefined : first.answer
    if (answer === undefined) {
      applications.set(identity(c), [...(applications.get(identity(c)) ?? []), { operationId: c.operationId, seq: seq++ }])
      appliedOps.add(c.operationId)
      answer = ACTION.has(c.tool) ? { status: 'committed', result: { done: c.arguments.x } } : { content: { done: c.arguments.x } }
      if (IDEMPOTENT.has(c.tool)) byKey.set(c.idempotencyKey!, { answer })
      note(c.arguments.k, `arrived ${c.callId} key ${c.idempotencyKey}: APPLIED, then ${fault}`)
    } else {
      note(c.arguments.k, `arrived ${c.callId} key ${c.idempotencyKey}: first answer again, then ${fault}`)
    }
    switch (fault) {
      case 'timeout': await sleep(TOOL_TIMEOUT_MS + 80); return answer
      case 'http5xx': return reply.code(pickBy(`${key}|code`, [500, 502, 503])).send({ error: 'boom' })
      case 'drop': req.raw.socket.destroy(); return undefined
      default: return answer
    }
  }
  for (const name of [...WRITES, 'look']) ex.on(name, behave)
  ex.on('look', () => ({ content: { seen: true } }))

  // ---- the status endpoint: tells the truth, unless it does not know yet or fails ----
  let statusAnswers = 0
  const asked = new Map<string, number>()
  const st = await startStatusServer(t)
  for (const name of WRITES) {
    st.on(name, (operationId) => {
      statusAnswers++
      asked.set(operationId, (asked.get(operationId) ?? 0) + 1)
      const r = draw(`${operationId}|${asked.get(operationId)!}`)
      if (r < 0.15) return { status: 'unknown' }
      if (r < 0.25) return 503
      if (!answeredAt.has(operationId)) answeredAt.set(operationId, seq++)
      const applied = appliedOps.has(operationId)
      // Final: a send of it that arrives after this is refused.
      if (!applied) fenced.add(operationId)
      note(byOp.get(operationId), `status of ${operationId}: ${applied ? 'committed' : 'failed'}`)
      return applied ? { status: 'committed', result: { recovered: true } } : { status: 'failed' }
    })
  }

  const executor = (name: string) => ({ url: `${ex.url}/tools/${name}`, timeoutMs: TOOL_TIMEOUT_MS, ...(withStatusUrl ? { statusUrl: `${st.url}/status/${name}` } : {}) })
  const { app } = await buildTestApp(t, {
    config: { logLevel: 'warn' },
    tools: [
      tool('pay', ex.url, { executor: executor('pay') }),
      tool('order', ex.url, { executor: executor('order'), action: {} }),
      tool('put', ex.url, { executor: executor('put'), idempotent: true }),
      tool('charge', ex.url, { executor: executor('charge'), idempotent: true, action: {} }),
      tool('look', ex.url, { readOnly: true })
    ]
  })

  const figures: SoakFigures = { turns: 0, calls: 0, faults, statusAnswers: 0, applied: 0, duplicates: 0, duplicatesWhileUnresolved: 0, resendsAfterCommitted: 0, keyMismatches: 0, lateRefused: 0, repeatedRefusals: 0, blockedRetries: 0, blockedReads: 0, strayBlocks: 0, resolved: {}, stillOpen: 0 }
  const resolutions: Resolutions = { byStatus: (op) => answeredAt.has(op), byRetry: new Set() }
  const mismatched: string[] = []
  await Promise.all(Array.from({ length: RUNS }, (_, i) => model(app, `soak-${withStatusUrl ? 's' : 'n'}-${i}`, figures, ex.calls, resolutions, random(seed + i), note, mismatched)))
  for (const k of new Set(mismatched)) t.comment(`retried under another key while unresolved: ${k}\n${(history.get(k) ?? []).join('\n')}`)

  figures.statusAnswers = statusAnswers
  figures.lateRefused = lateRefused
  figures.repeatedRefusals = repeatedRefusals
  for (const [id, list] of applications) {
    figures.applied += list.length
    // An idempotent executor applies a key once, so a second application of an idempotent write means a new key was used.
    if (list.length > 1) figures.duplicates += list.length - 1
    for (let i = 1; i < list.length; i++) {
      // The earlier send was applied, so a definitive status answer for it said committed.
      const resolved = answeredAt.get(list[i - 1]!.operationId)
      if (resolved !== undefined && resolved < list[i]!.seq) figures.resendsAfterCommitted++
      else {
        figures.duplicatesWhileUnresolved++
        const k = (JSON.parse(id.slice(id.indexOf('{'))) as { k: string }).k
        t.comment(`applied again while unresolved: ${id}\n${(history.get(k) ?? []).join('\n')}`)
      }
    }
  }
  for (const how of ['status_url', 'idempotent_retry', 'manual']) figures.resolved[how] = (await metric(app, 'toolgate_uncertain_resolved_total', `how="${how}"`)) ?? 0
  figures.stillOpen = (await metric(app, 'toolgate_uncertain_unresolved')) ?? -1
  return figures
}

/** One run of the scripted model: each turn re-sends every intent not yet ok (new call ids), adds new writes and a read. */
async function model (app: FastifyInstance, runId: string, figures: SoakFigures, sent: readonly ExecutorCall[], resolutions: Resolutions, rand: () => number,
  note: (k: string, line: string) => void, mismatched: string[]): Promise<void> {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!
  const made = await app.inject({ method: 'POST', url: '/v1/runs', payload: { runId, limits: NO_LOOP_LIMITS } })
  if (made.statusCode !== 201) throw new Error(`run ${runId}: ${made.body}`)
  const intents: Intent[] = []
  let next = 0
  let callSeq = 0
  for (let turn = 1; turn <= TURNS; turn++) {
    const open = intents.filter((i) => !i.done)
    for (let n = pick([0, 1, 1, 2]); n > 0; n--) {
      const id = next++
      const intent: Intent = { id, tool: pick(WRITES), args: { k: `${runId}-${id}`, x: id }, done: false, sends: 0, uncertainOps: new Set() }
      intents.push(intent)
      open.push(intent)
    }
    const calls = open.map((i) => ({ intent: i, call: { id: `c${callSeq++}`, name: i.tool, arguments: i.args } }))
    const read = pick([true, false]) ? { id: `c${callSeq++}`, name: 'look', arguments: { k: runId, x: turn } } : null
    const body = { batchId: `t${turn}`, calls: [...calls.map((c) => c.call), ...(read === null ? [] : [read])] }
    const before = sent.length
    const res = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/batches`, payload: body })
    if (res.statusCode !== 200) throw new Error(`run ${runId} turn ${turn}: ${res.statusCode} ${res.body}`)
    const results = (JSON.parse(res.body) as { results: Array<{ callId: string, status: string, details: Record<string, any> }> }).results
    figures.turns++
    figures.calls += body.calls.length
    const byId = new Map(results.map((r) => [r.callId, r]))
    if (read !== null && byId.get(read.id)?.status === 'blocked') figures.blockedReads++
    // What reached the executor in this turn (other runs' calls interleave), by call id: an idempotent retry must carry the key of the uncertain send it repeats.
    const arrived = new Map(sent.slice(before).filter((c) => c.runId === runId).map((c) => [c.callId, c]))
    for (const { intent, call } of calls) {
      const r = byId.get(call.id)!
      const pendingOp = [...intent.uncertainOps].at(-1)
      const got = arrived.get(call.id)
      const unsent = r.details.reason === 'executor_unavailable'
      const definitive = r.status !== 'uncertain' && r.details.receipt?.status !== 'uncertain' && !unsent
      note(intent.args.k, `turn ${turn} ${call.id}: ${r.status}${r.details.reason === undefined ? '' : ` (${r.details.reason})`} op ${r.details.operationId ?? r.details.blockedByOperation ?? '-'}${got === undefined ? ', not arrived in the turn' : ` sent under ${got.idempotencyKey}`}`)
      // Once the pending send is resolved (by the status endpoint, or by a retry's definitive answer), the re-send is a new call under its own key.
      const pendingOpen = pendingOp !== undefined && !resolutions.byStatus(pendingOp) && !resolutions.byRetry.has(pendingOp)
      if (IDEMPOTENT.has(intent.tool) && pendingOpen && got !== undefined && got.idempotencyKey !== pendingOp) {
        figures.keyMismatches++
        mismatched.push(intent.args.k)
      }
      if (pendingOpen && got?.idempotencyKey === pendingOp && definitive) resolutions.byRetry.add(pendingOp)
      intent.sends++
      if (r.status === 'ok') {
        intent.done = true
        continue
      }
      if (r.status === 'uncertain' && typeof r.details.operationId === 'string') intent.uncertainOps.add(r.details.operationId)
      if (r.status === 'blocked' && r.details.reason === 'unresolved_uncertain_write') {
        figures.blockedRetries++
        if (!intent.uncertainOps.has(r.details.blockedByOperation)) figures.strayBlocks++
      }
    }
  }
}
