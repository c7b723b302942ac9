import { connect } from 'node:net'
/**
 * Shared test helpers: an app per test (closed on teardown), a recording
 * executor on a real port 0, and tool definitions pointing at it.
 */
import { createServer } from 'node:net'
import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { buildApp, type AppOptions } from '../src/app.js'
import { KeyRing } from '../src/auth/keys.js'
import { type Config, defaultConfig } from '../src/config.js'
import { createLogger } from '../src/logger.js'
import type { ToolDefinition } from '../src/model/tool.js'

type Tap = { teardown: (fn: () => unknown) => void }

export interface TestApp {
  app: FastifyInstance
  /** Every log line the app wrote, raw JSON text. */
  logs: string[]
}

export interface TestAppOptions extends Omit<AppOptions, 'logger' | 'tools'> {
  config?: Partial<Config>
  /** Tool definitions registered before the test starts. */
  tools?: ToolDefinition[]
  /** Keys document as in TOOLGATE_API_KEYS_FILE; omitted: open mode. */
  keysDoc?: unknown
}

export async function buildTestApp (t: Tap, opts: TestAppOptions = {}): Promise<TestApp> {
  const logs: string[] = []
  const stream = new Writable({
    write (chunk, _enc, cb) {
      logs.push(String(chunk))
      cb()
    }
  })
  const config = defaultConfig({ logLevel: 'trace', ...opts.config })
  const keys = opts.keysDoc === undefined ? (opts.keys ?? new KeyRing()) : KeyRing.fromDocument(opts.keysDoc)
  const { tools, config: _c, keysDoc: _k, ...overrides } = opts
  const app = await buildApp(config, { ...overrides, keys, logger: createLogger(config.logLevel, stream) })
  if (tools !== undefined) app.services.tools.putAll(tools)
  t.teardown(() => app.close())
  return { app, logs }
}

/** One call as the executor received it. */
export interface ExecutorCall {
  path: string
  tool: string
  callId: string
  runId: string
  batchId: string
  operationId: string
  idempotencyKey: string | undefined
  traceparent: string | undefined
  arguments: Record<string, unknown>
  body: Record<string, unknown>
  startedAt: number
  endedAt: number | null
}

export type ExecutorBehaviour = (call: ExecutorCall, req: FastifyRequest, reply: FastifyReply) => unknown | Promise<unknown>

export interface TestExecutor {
  url: string
  /** Every call received, in arrival order. */
  calls: ExecutorCall[]
  /** Routes a tool (by path /tools/<name>) to a behaviour; the default answers {content: {ok: true, tool}}. */
  on: (tool: string, behaviour: ExecutorBehaviour) => void
  /** The highest number of calls in progress at once. */
  maxConcurrent: () => number
  app: FastifyInstance
}

/** A run's limits when it sets none, as SPEC sections 3 and 15 give them (written out here, not read from the code under test). */
export const DEFAULT_LIMITS = {
  exactToolRepeatAdvisoryThreshold: 3,
  exactToolRepeatTerminationThreshold: 8,
  maxTurns: null,
  maxToolCalls: null,
  timeoutMs: null,
  maxTotalTokens: null,
  cycleAdvisoryRepetitions: 3,
  cycleTerminationRepetitions: 6,
  consecutiveErrorAdvisory: 3,
  consecutiveErrorTermination: 10,
  noProgressAdvisory: 10,
  noProgressTermination: 30
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** A real executor on 127.0.0.1:0 that records each call's start and end. */
export async function startExecutor (t: Tap): Promise<TestExecutor> {
  const app = Fastify({ logger: false, keepAliveTimeout: 60_000 })
  const calls: ExecutorCall[] = []
  const behaviours = new Map<string, ExecutorBehaviour>()
  let running = 0
  let peak = 0
  app.post<{ Params: { tool: string }, Body: Record<string, unknown> }>('/tools/:tool', async (req, reply) => {
    const body = req.body
    const call: ExecutorCall = {
      path: req.url,
      tool: req.params.tool,
      callId: String(body.callId),
      runId: String(body.runId),
      batchId: String(body.batchId),
      operationId: String(body.operationId),
      idempotencyKey: req.headers['idempotency-key'] as string | undefined,
      traceparent: req.headers.traceparent as string | undefined,
      arguments: body.arguments as Record<string, unknown>,
      body,
      startedAt: performance.now(),
      endedAt: null
    }
    calls.push(call)
    running++
    peak = Math.max(peak, running)
    try {
      const behaviour = behaviours.get(req.params.tool)
      const answer = behaviour === undefined ? { content: { ok: true, tool: req.params.tool } } : await behaviour(call, req, reply)
      if (reply.sent || reply.raw.destroyed) return reply
      return answer
    } finally {
      call.endedAt = performance.now()
      running--
    }
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return {
    url,
    calls,
    app,
    on: (tool, behaviour) => { behaviours.set(tool, behaviour) },
    maxConcurrent: () => peak
  }
}

/** A tool definition with an object schema of the given properties. */
export function tool (name: string, executorUrl: string, extra: Partial<ToolDefinition> = {}): ToolDefinition {
  return {
    name,
    description: `The ${name} tool.`,
    inputSchema: { type: 'object', properties: { x: { type: 'integer' }, y: { type: 'integer' }, k: { type: 'string' }, secret: { type: 'string' } } },
    executor: { url: `${executorUrl}/tools/${name}`, timeoutMs: 5000 },
    ...extra
  }
}

/** POSTs JSON through inject and returns status and parsed body. */
export async function post (app: FastifyInstance, url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number, body: any, headers: Record<string, unknown> }> {
  const res = await app.inject({ method: 'POST', url, payload: body as object, headers: { 'content-type': 'application/json', ...headers } })
  return { status: res.statusCode, body: res.body === '' ? undefined : JSON.parse(res.body), headers: res.headers }
}

export async function get (app: FastifyInstance, url: string, headers: Record<string, string> = {}): Promise<{ status: number, body: any, headers: Record<string, unknown> }> {
  const res = await app.inject({ method: 'GET', url, headers })
  const isJson = String(res.headers['content-type'] ?? '').includes('json')
  return { status: res.statusCode, body: isJson && res.body !== '' ? JSON.parse(res.body) : res.body, headers: res.headers }
}

/** Creates a run and sends one batch; returns the batch answer. */
export async function runBatch (app: FastifyInstance, calls: unknown[], runOptions: Record<string, unknown> = {}): Promise<{ status: number, body: any }> {
  const run = await post(app, '/v1/runs', runOptions)
  if (run.status !== 201) throw new Error(`run creation failed: ${JSON.stringify(run.body)}`)
  return post(app, `/v1/runs/${run.body.runId}/batches`, { calls })
}

/**
 * Holds every call of `toolName` at the executor until `release()`;
 * `started` resolves when the first one arrives. For tests that act while a
 * batch is in flight.
 */
export function holdCalls (ex: TestExecutor, toolName: string, answer: unknown = { content: 'done' }): { started: Promise<void>, release: () => void } {
  let release!: () => void
  const gate = new Promise<void>((resolve) => { release = resolve })
  let arrived!: () => void
  const started = new Promise<void>((resolve) => { arrived = resolve })
  ex.on(toolName, async () => {
    arrived()
    await gate
    return answer
  })
  return { started, release }
}

/** A port nothing listens on right now (for processes that must be told their port). */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/**
 * A client that connects to 127.0.0.1:`port`, sends `opening` (or nothing)
 * and never the rest: answers what came back once the server closed the
 * connection; rejects if it was still open after `giveUpMs`.
 */
export function stalledClient (port: number, opening: string, giveUpMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { text += chunk })
    socket.on('close', () => resolve(text))
    socket.on('error', reject)
    if (opening !== '') socket.write(opening)
    setTimeout(() => { socket.destroy(); reject(new Error('the server never closed the stalled client')) }, giveUpMs).unref()
  })
}
