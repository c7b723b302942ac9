/**
 * The bench executor, shaped like examples/executor.ts: a fast fastify
 * executor on loopback that answers `{content}`. A call with `arguments.ms`
 * sleeps that long first. A call with `arguments.key` is counted when it
 * starts while another call with the same key is still running at the
 * executor: the same-key overlaps that conflict keys exist to prevent.
 */
import Fastify, { type FastifyInstance } from 'fastify'

interface Body { callId?: string, tool?: string, arguments?: { x?: number, y?: number, ms?: number, key?: string } }

const TERRAIN = ['grass', 'sand', 'water', 'rock']

export function buildBenchExecutor (): FastifyInstance {
  const app = Fastify({ logger: false, keepAliveTimeout: 60_000 })
  const running = new Map<string, number>()
  let overlaps = 0
  let keyed = 0

  app.post<{ Params: { tool: string }, Body: Body }>('/tools/:tool', async (req) => {
    const args = req.body?.arguments ?? {}
    if (typeof args.ms !== 'number' && args.key === undefined) {
      const x = args.x ?? 0
      const y = args.y ?? 0
      return { content: { x, y, terrain: TERRAIN[Math.abs(x * 31 + y * 17) % TERRAIN.length], color: null, structure: null } }
    }
    const key = typeof args.key === 'string' ? args.key : null
    if (key !== null) {
      keyed++
      const n = running.get(key) ?? 0
      if (n > 0) overlaps++
      running.set(key, n + 1)
    }
    try {
      if (typeof args.ms === 'number' && args.ms > 0) await new Promise((resolve) => setTimeout(resolve, args.ms))
      return { content: { slept: args.ms ?? 0 } }
    } finally {
      if (key !== null) running.set(key, running.get(key)! - 1)
    }
  })

  app.get('/stats', async () => ({ overlaps, keyed }))
  app.post('/stats/reset', async () => {
    overlaps = 0
    keyed = 0
    return { overlaps, keyed }
  })
  return app
}
