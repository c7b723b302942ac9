/**
 * The typed client in use: one run, one turn of two calls, the turn read
 * back, the run found in the tenant's list. Each step's input and answer are
 * typed from openapi.yaml; nothing here is cast.
 *
 *   node dist/examples/openapi-client/example.js http://127.0.0.1:8080 [api key]
 */
import { fileURLToPath } from 'node:url'
import { ToolgateClient, ToolgateError } from './client.js'

/** What the example saw: the statuses of the turn's calls, and whether the run is listed as active. */
export async function firstTurn (tg: ToolgateClient, runId: string, calls: Array<{ id: string, name: string, arguments: Record<string, unknown> }>): Promise<{ statuses: string[], listed: boolean, missing: string }> {
  const created = await tg.call('createRun', { body: { runId, toolExecution: 'safeParallel', maxConcurrentTools: 4 } })
  const batch = await tg.call('runBatch', { params: { runId: created.data.runId }, body: { batchId: 'turn-1', calls } })
  const statuses = batch.data.results.map((r) => r.status)
  const again = await tg.call('getBatch', { params: { runId, batchId: 'turn-1' } })
  if (again.status !== 200) throw new Error(`expected 200, got ${again.status}`)
  const page = await tg.call('listRuns', { query: { state: 'active', limit: 50 } })
  const listed = page.data.runs.some((r) => r.runId === runId && r.lastActiveAt !== '')
  let missing = ''
  try {
    await tg.call('getRun', { params: { runId: `${runId}-nope` } })
  } catch (err) {
    if (!(err instanceof ToolgateError)) throw err
    missing = err.code
  }
  return { statuses, listed, missing }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const tg = new ToolgateClient(process.argv[2] ?? 'http://127.0.0.1:8080', process.argv[3] === undefined ? {} : { apiKey: process.argv[3] })
  console.log(await firstTurn(tg, `typed-${Date.now()}`, [{ id: 'c1', name: 'look', arguments: { x: 1 } }]))
}
