/**
 * One build's batches with nothing in the way that changes from run to run,
 * for `instructions.ts` to count under callgrind:
 *
 *   node instructions-child.js [--window] <dist> <batchSize> <warmup> <iterations> [<guard>]
 *
 * The build in <dist> is loaded in this process and driven through
 * `app.inject` (no sockets); its one tool answers from an in-process
 * executor (the executor port's `via`, as an imported MCP tool's does), so
 * no network or scheduling order can make one run take another path. Each
 * iteration creates a run, sends one batch of <batchSize> calls and ends the
 * run: <warmup> of them, then <iterations>. Prints the iterations done.
 * <guard> names a registered run-level rule the service runs without
 * (`guard-cost.ts`); a build that predates the option runs them all.
 * With `--window`, it prints `warm` after the warm-up and `counted` after
 * the iterations, and waits for a line on stdin after each: the time for the
 * counting process to turn valgrind's instrumentation on and off.
 */
import { Writable } from 'node:stream'
import { pathToFileURL } from 'node:url'
import { resolve } from 'node:path'

const argv = process.argv.slice(2)
const window = argv[0] === '--window'
const [dist, ...rest] = window ? argv.slice(1) : argv
const [batchSize, warmup, iterations] = rest.slice(0, 3).map(Number)
const without = rest[3]
if (dist === undefined || ![batchSize, warmup, iterations].every((n) => Number.isInteger(n) && n! >= 0) || batchSize === 0) {
  throw new TypeError('Usage: instructions-child.js [--window] <dist> <batchSize> <warmup> <iterations> [<guard>]')
}

/** What this child uses of a build: true of every build since tools could be imported from MCP servers. */
interface Build {
  app: { buildApp: (config: unknown, opts: { logger: unknown, withoutGuards?: string[] }) => Promise<BuildApp> }
  config: { defaultConfig: (over: Record<string, unknown>) => unknown }
  logger: { createLogger: (level: string, stream: Writable) => unknown }
}
interface BuildApp {
  services: {
    tools: { compile: (input: unknown, via: unknown) => unknown, replaceOwned: (owner: string, tools: unknown[]) => unknown }
    engine?: { guards?: ReadonlyArray<{ name: string }> }
  }
  inject: (req: { method: string, url: string, payload?: unknown, headers?: Record<string, string> }) => Promise<{ statusCode: number, body: string }>
  close: () => Promise<unknown>
}

const load = async (file: string): Promise<unknown> => await import(pathToFileURL(resolve(dist, 'src', file)).href)
const build = { app: await load('app.js'), config: await load('config.js'), logger: await load('logger.js') } as Build
const config = build.config.defaultConfig({ logLevel: 'info', maxValidationMs: 60_000 })
const logger = build.logger.createLogger('info', new Writable({ write (_chunk, _enc, cb) { cb() } }))
const app = await build.app.buildApp(config, without === undefined ? { logger } : { logger, withoutGuards: [without] })
const answer = { kind: 'answered', status: 200, body: { content: 'ok' }, bodyText: '{"content":"ok"}' }
const tool = app.services.tools.compile({
  name: 'look',
  description: 'Looks.',
  inputSchema: { type: 'object', properties: { x: { type: 'integer' } } },
  executor: { url: 'http://127.0.0.1:9/tools/look', timeoutMs: 5000 },
  readOnly: true
}, { send: async () => answer })
app.services.tools.replaceOwned('instructions', [tool])
if (without !== undefined && app.services.engine?.guards?.some((g) => g.name === without) !== false) throw new Error(`the build in ${dist} cannot run without the guard ${without}`)

const json = { 'content-type': 'application/json' }
let x = 0
async function iterate (count: number, tag: string): Promise<void> {
  for (let i = 0; i < count; i++) {
    // Ids of one length, arguments of one size: every iteration writes the same number of bytes.
    const runId = `${tag}${String(i).padStart(7, '0')}`
    await app.inject({ method: 'POST', url: '/v1/runs', payload: { runId }, headers: json })
    const calls = Array.from({ length: batchSize! }, (_, j) => ({ id: `c${j}`, name: 'look', arguments: { x: 100 + (x++ % 900) } }))
    const res = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/batches`, payload: { calls }, headers: json })
    if (res.statusCode !== 200 || (JSON.parse(res.body) as { results: Array<{ status: string }> }).results.some((r) => r.status !== 'ok')) {
      throw new Error(`a batch did not complete: ${res.statusCode} ${res.body.slice(0, 500)}`)
    }
    await app.inject({ method: 'DELETE', url: `/v1/runs/${runId}` })
  }
}
// No collection forced between the two: a full collection asked for by gc() makes V8 throw away
// much of the optimized code (deoptimized for weak objects), which the counted iterations would
// then compile again. Both runs of a build do the same warm-up, so they reach the count alike.
/** Says `what` and waits for the line that answers it (`--window` only). */
async function handOver (what: string): Promise<void> {
  if (!window) return
  const answered = new Promise((resolveLine) => process.stdin.once('data', resolveLine))
  process.stdout.write(`${what}\n`)
  await answered
}
await iterate(warmup!, 'w')
await handOver('warm')
await iterate(iterations!, 'm')
await handOver('counted')
process.stdin.destroy()
await app.close()
process.stdout.write(`${iterations}\n`)
