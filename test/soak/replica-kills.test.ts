/**
 * The write-ahead soak (SPEC section 17), seeded: two, then three real
 * replicas on one Redis, runs spread over them, replicas SIGKILLed while a
 * write they sent is at the executor (and replaced), the orchestrator
 * resending a batch whose answer never came to another replica (same
 * batchId, once the dead replica's lease passed), and the model retrying
 * every write it saw `uncertain` under a new call id. The executor counts
 * applications by each write's own nonce and by operation id: none may be
 * applied twice, and every batch answer has exactly one result per call, in
 * order. Prints its figures. Skipped, saying why, when no Redis answers at
 * TOOLGATE_TEST_REDIS_URL.
 */
import { randomUUID } from 'node:crypto'
import { rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { sleep, startExecutor, tool } from '../helper.js'
import { SEED, SEED_VARIABLE, seededRandom } from '../seed.js'
import { REDIS_URL, deleteByPrefix, redisUnavailable } from '../store/harness.js'
import { type Answer, type Replica, buildToolgate, call, startReplica } from '../replicas/processes.js'

// Bounded work, not a deadline: room for a loaded 2-core machine.
t.setTimeout(300_000)

/** Batches per topology: 2 × 1000 by default. */
const BATCHES = Number(process.env.SOAK_WAL_BATCHES ?? 1000)
const WORKERS = 12
const LEASE_MS = 2000
/** Kills per topology at most, spaced by the replacement's start. */
const MAX_KILLS = 6
/** The chance that a write's arrival kills the replica that sent it (while no kill is under way). */
const KILL_CHANCE = 0.02

const noRedis = await redisUnavailable()
if (noRedis !== undefined) {
  t.plan(0, `write-ahead soak skipped: ${noRedis}`)
} else {
  t.comment(`random seed ${SEED} (replay with ${SEED_VARIABLE}=${SEED})`)
  const server = buildToolgate()
  const totals = { batches: 0, kills: 0, resends: 0, retries: 0, appliedTwice: 0 }
  for (const replicas of [2, 3]) {
    await t.test(`${replicas} replicas, SIGKILLed mid-write: no write applied twice, one result per call`, async (t) => {
      const f = await soak(t, server, replicas, seededRandom(SEED + replicas))
      t.comment(`${replicas} replicas: ${f.batches} batches, ${f.calls} calls, ${f.kills} kills, ${f.resends} resends, ${f.lost} answered replica_lost, ${f.leaseLost} cancelled (lease_lost), ${f.retries} retries (${f.blocked} blocked), applied twice: ${f.appliedTwice}`)
      for (const k of ['batches', 'kills', 'resends', 'retries', 'appliedTwice'] as const) totals[k] += f[k]
    })
  }
  t.comment(`in all: ${totals.batches} batches, ${totals.kills} kills, ${totals.resends} resends, ${totals.retries} retries, applied twice: ${totals.appliedTwice}`)
}

interface Figures { batches: number, calls: number, kills: number, resends: number, lost: number, leaseLost: number, retries: number, blocked: number, appliedTwice: number }
interface Call { id: string, name: string, arguments: Record<string, unknown> }

async function soak (t: Test, server: string, count: number, rand: () => number): Promise<Figures> {
  const f: Figures = { batches: 0, calls: 0, kills: 0, resends: 0, lost: 0, leaseLost: 0, retries: 0, blocked: 0, appliedTwice: 0 }
  /** Writes answered `cancelled` (lease_lost): never sent. */
  const unsentWrites: string[] = []
  const prefix = `toolgate-test:${randomUUID()}:`
  t.teardown(() => deleteByPrefix(prefix))

  // ---- the executor: applies a write on arrival, counted by its nonce and by its operation id ----
  const ex = await startExecutor(t)
  const byNonce = new Map<string, number>()
  const byOperation = new Map<string, number>()
  /** Run id → the replica its worker sent its batch to last. */
  const sentBy = new Map<string, Replica>()
  let killing = false
  /** The replacement of a killed replica under way: waited for before the figures are read. */
  let replacing: Promise<void> = Promise.resolve()
  const write = async (c: { runId: string, operationId: string, arguments: Record<string, unknown> }): Promise<unknown> => {
    const nonce = String(c.arguments.nonce)
    byNonce.set(nonce, (byNonce.get(nonce) ?? 0) + 1)
    byOperation.set(c.operationId, (byOperation.get(c.operationId) ?? 0) + 1)
    const victim = sentBy.get(c.runId)
    if (!killing && f.kills < MAX_KILLS && victim !== undefined && live.includes(victim) && rand() < KILL_CHANCE) {
      killing = true
      f.kills++
      // Killed while this write is applied and unanswered; a fresh replica takes its place.
      replacing = replace(victim).finally(() => { killing = false })
    }
    await sleep(rand() * 10)
    return { content: { applied: nonce } }
  }
  ex.on('pay', write)
  ex.on('note', write)

  const toolsFile = join(tmpdir(), `toolgate-soak-tools-${randomUUID()}.json`)
  writeFileSync(toolsFile, JSON.stringify({
    tools: [tool('pay', ex.url, { conflictKey: 'acct:{/acct}' }), tool('note', ex.url), tool('look', ex.url, { readOnly: true })]
  }))
  t.teardown(() => rmSync(toolsFile, { force: true }))
  const env = { TOOLGATE_STORE: `${REDIS_URL}?prefix=${encodeURIComponent(prefix)}`, TOOLGATE_TOOLS_FILE: toolsFile, TOOLGATE_LEASE_MS: String(LEASE_MS) }
  let started = 0
  const live: Replica[] = await Promise.all(Array.from({ length: count }, () => startReplica(t, server, `R${++started}`, env)))
  const replace = async (victim: Replica): Promise<void> => {
    live.splice(live.indexOf(victim), 1)
    await victim.kill()
    live.push(await startReplica(t, server, `R${++started}`, env))
  }
  const pick = (): Replica => live[Math.floor(rand() * live.length)]!

  // ---- the orchestrators: one run each, a batch at a time ----
  const problems: string[] = []
  let issued = 0
  const worker = async (w: number): Promise<void> => {
    const runId = `soak-${w}`
    await deliver(runId, '/v1/runs', { runId }, [201, 409])
    const retries: Call[] = []
    let n = 0
    while (issued < BATCHES) {
      issued++
      const calls: Call[] = []
      // The model retries what it saw uncertain, under new call ids.
      for (const r of retries.splice(0)) calls.push({ ...r, id: `${r.id}-retry` })
      const fresh = 1 + Math.floor(rand() * 3)
      for (let i = 0; i < fresh; i++) {
        n++
        const r = rand()
        const name = r < 0.45 ? 'pay' : r < 0.7 ? 'note' : 'look'
        calls.push({ id: `c${n}`, name, arguments: name === 'look' ? { acct: `a${n % 3}` } : { acct: `a${n % 3}`, nonce: `${runId}-${n}` } })
      }
      const batchId = `b${issued}-${w}`
      const answer = await deliver(runId, `/v1/runs/${runId}/batches`, { batchId, calls }, [200])
      f.batches++
      f.calls += calls.length
      const results = answer.body.results as Array<{ callId: string, status: string, details: Record<string, unknown> }>
      if (results.length !== calls.length || results.some((r, i) => r.callId !== calls[i]!.id)) problems.push(`${runId}/${batchId}: results do not match the calls one for one`)
      for (const [i, r] of results.entries()) {
        const c = calls[i]!
        if (c.id.endsWith('-retry')) {
          f.retries++
          if (r.status === 'blocked' && r.details.reason === 'unresolved_uncertain_write') f.blocked++
          else problems.push(`${runId}/${batchId}/${c.id}: a retry answered ${r.status}`)
          continue
        }
        if (r.status === 'uncertain') {
          if (r.details.cause === 'replica_lost') f.lost++
          retries.push(c)
        } else if (r.status === 'cancelled' && (r.details.reason ?? r.details.cause) === 'lease_lost') {
          // A replica paused past its lease (a loaded machine) stops its batch before the rest is sent:
          // one result, and the write must not have reached the executor.
          f.leaseLost++
          if (typeof c.arguments.nonce === 'string') unsentWrites.push(c.arguments.nonce)
        } else if (r.status !== 'ok') {
          problems.push(`${runId}/${batchId}/${c.id}: ${r.status} ${String(r.details.reason ?? r.details.cause ?? '')}`)
        }
      }
    }
  }
  /** Sends until a replica answers one of `expected`: a replica that died, or a run whose dead replica's lease holds, is the orchestrator's to retry. */
  const deliver = async (runId: string, path: string, body: unknown, expected: number[]): Promise<Answer> => {
    let resent = false
    for (let attempt = 0; attempt < 600; attempt++) {
      const replica = pick()
      sentBy.set(runId, replica)
      const answer = await call(replica, 'POST', path, body).catch(() => undefined)
      if (answer !== undefined && expected.includes(answer.status)) return answer
      if (answer !== undefined && !(answer.status === 409 && answer.body?.code === 'run_busy') && answer.status !== 503) {
        throw new Error(`${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`)
      }
      if (!resent && path.endsWith('/batches')) f.resends++
      resent = true
      await sleep(answer === undefined ? 20 : 100)
    }
    throw new Error(`${path}: no replica answered`)
  }
  const began = performance.now()
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)))
  await replacing
  t.comment(`${count} replicas: the batches took ${Math.round((performance.now() - began) / 100) / 10} s`)

  for (const [nonce, times] of byNonce) if (times > 1) { f.appliedTwice++; problems.push(`write ${nonce} applied ${times} times`) }
  for (const [op, times] of byOperation) if (times > 1) problems.push(`operation ${op} applied ${times} times`)
  for (const nonce of unsentWrites) if (byNonce.has(nonce)) problems.push(`write ${nonce} answered cancelled (lease_lost) but applied`)
  t.equal(f.appliedTwice, 0, 'no write applied twice')
  t.same(problems.slice(0, 20), [], 'every call answered once, as expected')
  t.ok(f.kills > 0, 'replicas were killed mid-write')
  return f
}


