/**
 * A small example executor: a grid world the bundled example tools act on.
 * It speaks toolgate's executor protocol (docs/executor-protocol.md): plain tools answer
 * `{content}`, the action tool `build` answers `{status, result, stateRevision}`
 * and remembers Idempotency-Keys, so a replayed operation is not applied twice.
 *
 *   node dist/examples/executor.js   # listens on 127.0.0.1:9000 (EXECUTOR_PORT)
 */
import Fastify, { type FastifyInstance } from 'fastify'
import { fileURLToPath } from 'node:url'

interface Body { runId: string, batchId: string, callId: string, tool: string, arguments: Record<string, unknown>, operationId: string }
interface Tile { color: string | null, structure: string | null }

const TERRAIN = ['grass', 'sand', 'water', 'rock']

export function buildExecutor (): FastifyInstance {
  const app = Fastify({ logger: false })
  const tiles = new Map<string, Tile>()
  const applied = new Map<string, unknown>()
  let revision = 0
  let built = 0

  const tile = (x: number, y: number): Tile => {
    const key = `${x}:${y}`
    let t = tiles.get(key)
    if (t === undefined) tiles.set(key, (t = { color: null, structure: null }))
    return t
  }

  app.post<{ Body: Body }>('/tools/look', async (req) => {
    const { x, y } = req.body.arguments as { x: number, y: number }
    const t = tiles.get(`${x}:${y}`)
    return { content: { x, y, terrain: TERRAIN[Math.abs(x * 31 + y * 17) % TERRAIN.length], color: t?.color ?? null, structure: t?.structure ?? null } }
  })

  app.post<{ Body: Body }>('/tools/inventory', async () => ({ content: { wood: 12, stone: 7, paint: ['red', 'green', 'blue'] } }))

  app.post<{ Body: Body }>('/tools/paint', async (req) => {
    const { x, y, color } = req.body.arguments as { x: number, y: number, color: string }
    tile(x, y).color = color
    revision++
    return { content: `Painted (${x}, ${y}) ${color}.` }
  })

  app.post<{ Body: Body }>('/tools/build', async (req, reply) => {
    const key = req.headers['idempotency-key']
    if (typeof key === 'string' && applied.has(key)) return applied.get(key)
    const { kind, x, y } = req.body.arguments as { kind: string, x: number, y: number }
    const t = tile(x, y)
    let answer
    if (t.structure !== null) {
      answer = { status: 'rejected', result: { reason: `(${x}, ${y}) already holds a ${t.structure}` }, stateRevision: revision }
    } else {
      t.structure = kind
      built++
      revision++
      answer = { status: 'committed', result: { label: `${kind[0]!.toUpperCase()}${kind.slice(1)} #${built}`, reward: kind === 'tower' ? 10 : 5 }, stateRevision: revision }
    }
    if (typeof key === 'string') applied.set(key, answer)
    return reply.send(answer)
  })

  return app
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const app = buildExecutor()
  const port = Number(process.env.EXECUTOR_PORT ?? 9000)
  await app.listen({ port, host: '127.0.0.1' })
  console.log(`example executor listening on http://127.0.0.1:${port}`)
}
