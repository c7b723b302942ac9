/**
 * The load generator's side of the three targets. `direct` sends each call of
 * a batch straight to the executor (all at once, like a relay would);
 * `relay` and `toolgate` get the batch as one POST. Every body is read whole.
 */
import { Pool } from 'undici'
import { BENCH_KEY } from './settings.js'

/** `toolgate` runs on the memory store, `redis` is toolgate on the Redis store. */
export type TargetName = 'direct' | 'relay' | 'floor' | 'toolgate' | 'redis'

/** One call as the model wrote it. */
export interface BenchCall { id: string, name: string, arguments: Record<string, unknown> }

export interface BatchAnswer { ok: boolean, status: number, text: string }

/** Where a batch can be sent. `open` and `close` bracket a run (a no-op but for toolgate). */
export interface Target {
  readonly name: TargetName
  openRun (options: Record<string, unknown>): Promise<string>
  send (runId: string, calls: readonly BenchCall[]): Promise<BatchAnswer>
  closeRun (runId: string): Promise<void>
  close (): Promise<void>
}

const JSON_HEADERS = { 'content-type': 'application/json' }

/** Same 128-connection pool as the relay's and toolgate's executor clients. */
export function directTarget (executorUrl: string): Target {
  const pool = new Pool(new URL(executorUrl).origin, { connections: 128, keepAliveTimeout: 10_000 })
  let seq = 0
  return {
    name: 'direct',
    openRun: async () => `direct_${++seq}`,
    async send (runId, calls) {
      const batchId = `b${++seq}`
      const answers = await Promise.all(calls.map(async (call) => {
        const res = await pool.request({
          path: `/tools/${call.name}`,
          method: 'POST',
          headers: JSON_HEADERS,
          body: JSON.stringify({ runId, batchId, callId: call.id, tool: call.name, arguments: call.arguments })
        })
        return { status: res.statusCode, text: await res.body.text() }
      }))
      const bad = answers.find((a) => a.status !== 200)
      return { ok: bad === undefined, status: bad?.status ?? 200, text: `[${answers.map((a) => a.text).join(',')}]` }
    },
    closeRun: async () => {},
    close: () => pool.close()
  }
}

/** A service of toolgate's shape: the relay, the floor or toolgate. `connections` is the concurrency offered. */
export function serviceTarget (name: 'relay' | 'floor' | 'toolgate' | 'redis', url: string, connections: number): Target {
  const pool = new Pool(url, { connections, keepAliveTimeout: 10_000 })
  const headers = { ...JSON_HEADERS, authorization: `Bearer ${BENCH_KEY}` }
  let seq = 0
  const request = async (method: 'POST' | 'DELETE', path: string, body?: unknown): Promise<BatchAnswer> => {
    const res = await pool.request({ path, method, headers: body === undefined ? { authorization: headers.authorization } : headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const text = await res.body.text()
    return { ok: res.statusCode >= 200 && res.statusCode < 300, status: res.statusCode, text }
  }
  return {
    name,
    async openRun (options) {
      if (name === 'relay') return `relay_${++seq}`
      const res = await request('POST', '/v1/runs', options)
      if (!res.ok) throw new Error(`${name} refused a run: ${res.status} ${res.text.slice(0, 300)}`)
      return (JSON.parse(res.text) as { runId: string }).runId
    },
    send: (runId, calls) => request('POST', `/v1/runs/${runId}/batches`, { calls }),
    async closeRun (runId) {
      if (name === 'relay') return
      const res = await request('DELETE', `/v1/runs/${runId}`)
      if (!res.ok) throw new Error(`${name} did not end run ${runId}: ${res.status} ${res.text.slice(0, 300)}`)
    },
    close: () => pool.close()
  }
}

/** Checks a whole answer the slow way: every result `ok`. Used on the first batch of each worker. */
export function assertAllOk (target: TargetName, answer: BatchAnswer, expected: number): void {
  if (!answer.ok) throw new Error(`${target} answered ${answer.status}: ${answer.text.slice(0, 300)}`)
  const parsed = JSON.parse(answer.text) as unknown
  const results = Array.isArray(parsed) ? parsed : (parsed as { results?: Array<{ status?: string }> }).results
  if (!Array.isArray(results) || results.length !== expected) throw new Error(`${target} answered ${String(results?.length)} results for ${expected} calls`)
  if (!Array.isArray(parsed)) {
    const bad = results.find((r: { status?: string }) => r.status !== 'ok')
    if (bad !== undefined) throw new Error(`${target} answered a result that is not ok: ${JSON.stringify(bad).slice(0, 300)}`)
  }
}
