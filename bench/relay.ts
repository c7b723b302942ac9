/**
 * The relay: the thinnest service of toolgate's shape. One fastify route
 * takes a batch, forwards every call to the executor at once with undici
 * (the same kind of keep-alive pool toolgate uses) and answers the results in
 * order. No preparation, scheduling or state: the physical limit of any
 * service in toolgate's position.
 */
import Fastify, { type FastifyInstance } from 'fastify'
import { Agent } from 'undici'

interface RelayCall { id: string, name: string, arguments?: unknown }

export function buildRelay (executorUrl: string): { app: FastifyInstance, close: () => Promise<void> } {
  const origin = new URL(executorUrl).origin
  // As toolgate's ExecutorClient: one Agent, 128 connections per origin.
  const agent = new Agent({ connections: 128, keepAliveTimeout: 10_000 })
  const app = Fastify({ logger: false, keepAliveTimeout: 60_000 })
  let seq = 0

  app.post<{ Params: { runId: string }, Body: { calls: RelayCall[] } }>('/v1/runs/:runId/batches', async (req) => {
    const batchId = `b${++seq}`
    const runId = req.params.runId
    const answers = await Promise.all(req.body.calls.map(async (call) => {
      const res = await agent.request({
        origin,
        path: `/tools/${call.name}`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ runId, batchId, callId: call.id, tool: call.name, arguments: call.arguments })
      })
      const answer = await res.body.json() as { content?: unknown, isError?: boolean }
      return { callId: call.id, status: res.statusCode < 300 ? 'ok' : 'error', content: answer.content, isError: answer.isError === true }
    }))
    return { runId, batchId, results: answers }
  })

  return { app, close: async () => { await app.close(); await agent.close() } }
}
