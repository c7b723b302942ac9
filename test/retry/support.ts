/**
 * Shared by the retry-safety tests: recovery attempts to await, an
 * executor status endpoint on a real port 0, and small readers of the API.
 */
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import type { AttemptOutcome, RecoveryTarget } from '../../src/uncertain/recovery.js'
import { get, post } from '../helper.js'
import type { FakeClock } from '../clock.js'

/**
 * The tools' timeout in the retry tests. It passes on the app's clock when
 * an executor calls `timeOut` while it has a call, never by waiting; long,
 * so that no real timer (undici's own) runs out first.
 */
export const TIMEOUT_MS = 60_000

/** In an executor's behaviour: the call's timeout passes while the executor has it (toolgate gives up on it: uncertain). */
export async function timeOut (clock: FakeClock): Promise<void> {
  await clock.pass(TIMEOUT_MS)
}

type Tap = { teardown: (fn: () => unknown) => void }

/** Recovery attempts as they finish, to be awaited one by one (no sleeping). */
export class Attempts {
  readonly seen: Array<{ target: RecoveryTarget, outcome: AttemptOutcome }> = []
  #waiters: Array<{ n: number, resolve: () => void }> = []
  readonly hook = (target: RecoveryTarget, outcome: AttemptOutcome): void => {
    this.seen.push({ target, outcome })
    this.#waiters = this.#waiters.filter((w) => {
      if (this.seen.length < w.n) return true
      w.resolve()
      return false
    })
  }

  /** Resolves once `n` attempts in all have finished. */
  async until (n: number): Promise<AttemptOutcome> {
    if (this.seen.length < n) await new Promise<void>((resolve) => this.#waiters.push({ n, resolve }))
    return this.seen[n - 1]!.outcome
  }
}

export type StatusBehaviour = (operationId: string) => unknown | Promise<unknown>

/** An executor's status endpoint: GET /status/:tool?operationId=...; answers what the behaviour of the tool returns (a number is an HTTP status). */
export async function startStatusServer (t: Tap): Promise<{ url: string, asked: Array<{ tool: string, operationId: string }>, on: (tool: string, b: StatusBehaviour) => void, app: FastifyInstance }> {
  const app = Fastify({ logger: false })
  const asked: Array<{ tool: string, operationId: string }> = []
  const behaviours = new Map<string, StatusBehaviour>()
  app.get<{ Params: { tool: string }, Querystring: { operationId: string } }>('/status/:tool', async (req, reply) => {
    asked.push({ tool: req.params.tool, operationId: req.query.operationId })
    const answer = await (behaviours.get(req.params.tool) ?? (() => ({ status: 'unknown' })))(req.query.operationId)
    if (typeof answer === 'number') return reply.code(answer).send({ error: 'boom' })
    return answer
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return { url, asked, on: (tool, b) => { behaviours.set(tool, b) }, app }
}

export async function listUncertain (app: FastifyInstance, runId: string): Promise<any[]> {
  const res = await get(app, `/v1/runs/${runId}/uncertain`)
  if (res.status !== 200) throw new Error(`GET uncertain answered ${res.status}: ${JSON.stringify(res.body)}`)
  return res.body.uncertain
}

export async function batch (app: FastifyInstance, runId: string, batchId: string, calls: unknown[]): Promise<any> {
  const res = await post(app, `/v1/runs/${runId}/batches`, { batchId, calls })
  if (res.status !== 200) throw new Error(`batch answered ${res.status}: ${JSON.stringify(res.body)}`)
  return res.body
}

/** A metric's value from GET /metrics, or undefined when absent. */
export async function metric (app: FastifyInstance, name: string, labels = ''): Promise<number | undefined> {
  const res = await get(app, '/metrics')
  const line = String(res.body).split('\n').find((l) => l.startsWith(labels === '' ? `${name} ` : `${name}{${labels}} `))
  return line === undefined ? undefined : Number(line.split(' ').pop())
}
