/**
 * One MCP session of toolgate's own MCP endpoint (SPEC section 16): the
 * official SDK's server on a Streamable HTTP transport, bound to one run and
 * to the key that opened it. `tools/list` offers the run's tools;
 * `tools/call` is a one-call turn of the run.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, CreateMessageResultSchema, ElicitResultSchema, ErrorCode, ListToolsRequestSchema, type LoggingLevel, McpError, type Notification as McpNotification, PingRequestSchema, type Request as McpRequest, SetLevelRequestSchema, type JSONRPCMessage, type ServerNotification, type ServerRequest } from '@modelcontextprotocol/sdk/types.js'
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js'
import type { RunService } from '../runs/service.js'
import type { ToolRegistry } from '../tools/registry.js'
import { offeredTools } from '../tools/offered.js'
import type { Tool } from '../model/tool.js'
import { ProblemError } from '../errors.js'
import { ownedRun } from '../runs/transitions.js'
import { context } from '@opentelemetry/api'
import { McpRequestSpans } from '../telemetry/mcp-spans.js'
import { runEndedResult } from './results.js'
import type { OneCallTurns, UserDecision } from './turns.js'
import { LeanAnswers, plainToolsCall } from './lean-answers.js'
import { RequestIds } from './request-ids.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RunOptions, RunRecord } from '../model/run.js'

/** The version toolgate reports as an MCP server. */

/** The run's tools a session offers, and the run's options. */
interface Offered { tools: Array<{ name: string, tool: Tool }>, options: RunOptions }
const SERVER_INFO = { name: 'toolgate', version: '0.1.0' }

/** What the SDK's server gives a request's handler beside the request. */
type HandlerExtra = RequestHandlerExtra<ServerRequest | McpRequest, ServerNotification | McpNotification>

/** Who opened the session (with which key), and on which run. */
export interface SessionOwner {
  tenant: string
  /** The key that opened it: a request with another key, even of the same tenant, does not find the session. */
  keyId: string
  scopes: ReadonlySet<string>
  keyName?: string | undefined
  runId: string
  /** The run's creation time: a run of the id created later (after this one expired) is not the session's. */
  createdAt: number
  /** The session created its run (`/mcp`): its DELETE ends the run. */
  ownsRun: boolean
  /** The path it was opened on; requests on another path do not find it. */
  path: string
}

export interface SessionDeps {
  runs: RunService
  tools: ToolRegistry
  turns: OneCallTurns
  /** Approvals wait up to this long for a person; an elicitation is given as long. */
  approvalTtlMs: number
  /** Told of each notification from the client, for the request metrics. */
  onNotification: (method: string) => void
  /** Told of each answer to a request of the client, with the request's method, for the request metrics. */
  onAnswer: (method: string, answer: JSONRPCMessage) => void
  /** Told each request the client cancelled and that got no answer, by method. */
  onCancelled: (method: string) => void
  onInitialized: (session: McpSession) => void
  onClosed: (session: McpSession) => void
}

/** MCP's log levels, least severe first (RFC 5424's, as `logging/setLevel` takes them). */
const LEVELS: readonly LoggingLevel[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']

/** The question put to an MCP client's user about a held call (elicitation, form mode). */
const DECISION_SCHEMA = {
  type: 'object' as const,
  properties: {
    approve: { type: 'boolean' as const, title: 'Approve', description: 'Run the call as shown.' },
    reason: { type: 'string' as const, title: 'Reason', description: 'Why not, when you decline it.' }
  },
  required: ['approve']
}

export class McpSession {
  readonly owner: SessionOwner
  readonly transport: StreamableHTTPServerTransport
  readonly server: Server
  /** The ids of the client's requests in flight: a request with one of them is refused (request-ids.ts). */
  readonly requests = new RequestIds()
  /** Last request seen, for the idle sweep. */
  lastSeen: number
  readonly #deps: SessionDeps
  /** The least severe level of log messages the client wants (`logging/setLevel`); all of them until it says. */
  #logLevel: LoggingLevel = 'debug'
  /** A SERVER span per request while tracing is on; null when it is off. */
  readonly #spans = McpRequestSpans.create()
  /** The plain `tools/call` requests answered by toolgate rather than the SDK's transport (lean-answers.ts). */
  readonly #lean: LeanAnswers
  #closed = false
  /** The run's options, once read (`#runOptions`). */
  #options: RunOptions | null = null

  constructor (owner: SessionOwner, deps: SessionDeps, now: number, generateId: () => string) {
    this.owner = owner
    this.#deps = deps
    this.lastSeen = now
    this.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: generateId,
      onsessioninitialized: () => deps.onInitialized(this),
      onsessionclosed: () => {
        this.#closed = true
        this.#lean.closeAll()
        this.#spans?.closeAll()
        deps.onClosed(this)
      }
    })
    this.#lean = new LeanAnswers(() => this.transport.sessionId)
    this.server = new Server(SERVER_INFO, {
      capabilities: { tools: { listChanged: true }, logging: {} },
      instructions: 'toolgate runs these tools under its safety rules: conflicting writes never overlap, a write whose outcome is unknown is never repeated blindly, loops are stopped, and some calls wait for a person to approve them.'
    })
    // Every request's id is freed when the client cancels it, which the SDK answers with nothing:
    // ping's handler, the SDK's own, is set again for that.
    this.server.setRequestHandler(PingRequestSchema, this.#freedWhenCancelled(async () => ({})))
    this.server.setRequestHandler(SetLevelRequestSchema, this.#freedWhenCancelled(async (request) => {
      this.#logLevel = request.params.level
      return {}
    }))
    this.server.setRequestHandler(ListToolsRequestSchema, this.#freedWhenCancelled(async () => {
      const offered = await this.#offered().catch((err: unknown) => {
        if (err instanceof ProblemError && err.code === 'run_not_found') throw new McpError(ErrorCode.InvalidRequest, `The run of this session (${owner.runId}) has ended and is gone: open a new session.`)
        throw err
      })
      return { tools: offered.tools.map(({ name, tool }) => describe(name, tool)) }
    }))
    this.server.setRequestHandler(CallToolRequestSchema, this.#freedWhenCancelled(async (request, extra) => {
      const { name } = request.params
      // Its place among the run's calls is taken as it arrives, before anything is awaited.
      const arrival = deps.turns.arrive(owner.runId)
      let options: RunOptions
      try {
        options = await this.#runOptions()
      } catch (err) {
        deps.turns.withdraw(owner.runId, arrival)
        // The run is gone (ended and freed, or expired): every call says so.
        if (err instanceof ProblemError && err.code === 'run_not_found') return runEndedResult('', 'ended', undefined)
        throw err
      }
      let match = this.#offeredTool(name, options)
      // A quarantined tool (a rare path): its server's pins are read again first, in case it was approved on another replica.
      if (match === undefined && deps.tools.quarantined(name) && !await deps.tools.stillQuarantined(name)) match = this.#offeredTool(name, options)
      if (match === undefined) {
        deps.turns.withdraw(owner.runId, arrival)
        // A run that is gone answers every call so, an unknown tool's too (a rare path: the run is read).
        const gone = await this.#run().then(() => false, (err: unknown) => err instanceof ProblemError && err.code === 'run_not_found')
        if (gone) return runEndedResult('', 'ended', undefined)
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name.slice(0, 128)}`)
      }
      const progressToken = extra._meta?.progressToken
      // Progress only grows: the executor's comes after the waiting's, counted on from where it stopped.
      let progressCount = 0
      const sendProgress = (progress: number, total: number | undefined, message: string | undefined): void => {
        if (progressToken === undefined) return
        progressCount = progress
        const params = { progressToken, progress, ...(total === undefined ? {} : { total }), ...(message === undefined ? {} : { message }) }
        void extra.sendNotification({ method: 'notifications/progress', params }).catch(() => {})
      }
      const sampling = this.server.getClientCapabilities()?.sampling !== undefined
      const elicitation = this.server.getClientCapabilities()?.elicitation !== undefined
      const result = await deps.turns.run({
        runId: owner.runId,
        createdAt: owner.createdAt,
        tenant: owner.tenant,
        scopes: owner.scopes,
        keyName: owner.keyName,
        tool: match.tool.name,
        options,
        arguments: request.params.arguments ?? {},
        signal: extra.signal,
        progress: progressToken === undefined ? undefined : (message) => sendProgress(progressCount + 1, undefined, message),
        relay: (() => {
          const base = progressCount
          return {
            progress: (u) => sendProgress(base + u.progress, u.total === undefined ? undefined : base + u.total, u.message),
            log: (m) => {
              if (LEVELS.indexOf(m.level as LoggingLevel) < LEVELS.indexOf(this.#logLevel)) return
              void extra.sendNotification({ method: 'notifications/message', params: { ...m, level: m.level as LoggingLevel } }).catch(() => {})
            },
            request: async (method, params, signal) => {
              // A server's question goes to the client's user as it came; the first answer, from here or from a person, wins.
              if (method === 'elicitation/create' && elicitation) return await extra.sendRequest({ method, params } as never, ElicitResultSchema, { signal, timeout: deps.approvalTtlMs }) as Record<string, unknown>
              if (method !== 'sampling/createMessage' || !sampling) throw new McpError(ErrorCode.InvalidRequest, `The MCP client of this call does not offer ${method === 'sampling/createMessage' ? 'sampling' : method === 'elicitation/create' ? 'elicitation' : method}.`)
              return await extra.sendRequest({ method, params } as never, CreateMessageResultSchema, { signal }) as Record<string, unknown>
            }
          }
        })(),
        askUser: this.server.getClientCapabilities()?.elicitation === undefined
          ? undefined
          : (question, signal) => this.#ask(question, signal, extra.requestId)
      }, arrival).catch((err: unknown) => {
        // The run was freed since the session read its options: the call says so, as one that found it gone.
        if (err instanceof ProblemError && err.code === 'run_not_found') return runEndedResult('', 'ended', undefined)
        throw err
      })
      // A call the client cancelled before it started: the SDK sends nothing for it.
      return result ?? { content: [], isError: true }
    }))
    // The run id goes with the answer to initialize, in its _meta (and in a header, set by the gateway).
    const send = this.transport.send.bind(this.transport)
    this.transport.send = async (message, options) => {
      if ('result' in message && isInitializeResult(message.result)) message.result._meta = { ...message.result._meta, 'toolgate/runId': owner.runId }
      if ('id' in message && message.id !== undefined && !('method' in message)) {
        // An answer: its request's id is free from now on (it is written before any other request is read).
        const method = this.requests.answered(message.id)
        if (method !== undefined) deps.onAnswer(method, message)
        this.#spans?.end(message.id, 'error' in message ? { error: message.error.code } : (message.result as { isError?: unknown }).isError === true ? { toolError: true } : { ok: true }, this.transport.sessionId)
      }
      if (this.#lean.send(message, options?.relatedRequestId)) return
      return send(message, options)
    }
  }

  /** Connects the SDK server to the transport; each incoming request's id is noted, each notification counted. */
  async connect (): Promise<void> {
    await this.server.connect(this.transport)
    const inner = this.transport.onmessage
    this.transport.onmessage = (message, extra) => {
      if ('method' in message) {
        if ('id' in message) this.requests.dispatched(message.id, message.method)
        else {
          this.#deps.onNotification(message.method)
          if (message.method === 'notifications/cancelled') this.#cancelFalsyId(message.params)
        }
      }
      const invalid = invalidParams(message)
      if (invalid !== null && 'id' in message) {
        // The SDK would answer its schema's error as -32603 (internal); JSON-RPC's is -32602, and the message says what is wrong.
        void this.transport.send({ jsonrpc: '2.0', id: message.id, error: { code: ErrorCode.InvalidParams, message: invalid } }, { relatedRequestId: message.id }).catch(() => {})
        return
      }
      const spans = this.#spans
      if (spans === null || !('method' in message)) {
        inner?.(message, extra)
      } else if ('id' in message) {
        // The request's handler runs under its span: a tools/call's batch span is its child.
        const params = message.params as { name?: unknown, protocolVersion?: unknown } | undefined
        const header = extra?.requestInfo?.headers['mcp-protocol-version']
        const version = message.method === 'initialize' ? params?.protocolVersion : header
        const ctx = spans.start({
          method: message.method,
          id: message.id,
          tool: message.method === 'tools/call' && typeof params?.name === 'string' ? params.name : undefined,
          sessionId: this.transport.sessionId,
          protocolVersion: typeof version === 'string' ? version : undefined
        })
        context.with(ctx, () => inner?.(message, extra))
      } else {
        if (message.method === 'notifications/cancelled') {
          const id = (message.params as { requestId?: unknown } | undefined)?.requestId
          if (typeof id === 'string' || typeof id === 'number') spans.cancelled(id)
        }
        inner?.(message, extra)
      }
    }
  }

  /**
   * Takes a plain `tools/call` past the SDK's transport: the SDK's server
   * handles its message, toolgate writes the answer (lean-answers.ts).
   * False when the request is anything else, for the transport to handle.
   * Its id is not in flight on this session (the gateway refuses such a
   * request first, request-ids.ts), so its answer is the one for that id.
   */
  lean (raw: IncomingMessage, res: ServerResponse, body: unknown, hijack: () => void): boolean {
    if (this.#closed) return false
    const message = plainToolsCall(raw, body)
    const inner = this.transport.onmessage
    if (message === null || inner === undefined) return false
    hijack()
    this.#lean.take(message.id, res)
    // The URL made only when a handler reads it (toolgate's do not).
    inner(message, { requestInfo: { headers: raw.headers, get url () { return requestUrl(raw) } } })
    return true
  }

  get id (): string | undefined {
    return this.transport.sessionId
  }

  /** Tells the client the tool list changed (it lists again). */
  toolsChanged (): void {
    this.server.sendToolListChanged().catch(() => { /* the client is away; it lists again when it comes back */ })
  }

  async close (): Promise<void> {
    this.#closed = true
    this.#lean.closeAll()
    this.#spans?.closeAll()
    await this.transport.close()
  }

  /**
   * A request handler whose request, when the client cancels it, gets no
   * answer (the SDK sends none for it): once the handler is done, nothing
   * more is sent about it, so its id is free and its lean answer ends.
   */
  #freedWhenCancelled<Q, R> (handler: (request: Q, extra: HandlerExtra) => Promise<R>): (request: Q, extra: HandlerExtra) => Promise<R> {
    return async (request, extra) => {
      try {
        return await handler(request, extra)
      } finally {
        if (extra.signal.aborted) {
          const method = this.requests.answered(extra.requestId)
          if (method !== undefined) this.#deps.onCancelled(method)
          this.#lean.drop(extra.requestId)
        }
      }
    }
  }

  /**
   * The SDK ignores the cancellation of a request whose id is 0 or "" (it
   * tests the id for truth), so such a call would run on, though both are
   * ids JSON-RPC allows: toolgate aborts its handler itself, as the SDK
   * does for any other id, through the SDK's own map of handlers in flight.
   */
  #cancelFalsyId (params: unknown): void {
    const { requestId, reason } = (params ?? {}) as { requestId?: unknown, reason?: unknown }
    if (requestId !== 0 && requestId !== '') return
    const inFlight = (this.server as unknown as { _requestHandlerAbortControllers?: Map<unknown, AbortController> })._requestHandlerAbortControllers
    inFlight?.get(requestId)?.abort(reason)
  }

  /** The run's tools as this session's key may see them, each under its model-safe name, and the run's options. */
  async #offered (): Promise<Offered> {
    const run = await this.#run()
    this.#options ??= run.options
    const tools = offeredTools(this.#deps.tools.list(), run.options.tools, this.owner.scopes, (name) => this.#deps.tools.quarantined(name)).map((tool) => ({ name: this.#deps.tools.modelName(tool.name), tool }))
    return { tools, options: run.options }
  }

  /**
   * The run's options: set when the run is created and never changed, so a
   * session reads its run once for them, not once per call (a store round
   * trip on Redis). Whether the run is still there and active is the
   * call's own business (the engine reads the run for it).
   */
  async #runOptions (): Promise<RunOptions> {
    this.#options ??= (await this.#run()).options
    return this.#options
  }

  /** The session's run; run_not_found once it is gone, even when a run of its id was created since. */
  async #run (): Promise<RunRecord> {
    const { tenant, runId, createdAt } = this.owner
    return ownedRun(await this.#deps.runs.get(tenant, runId), tenant, runId, createdAt)
  }

  /**
   * The tool offered under `name`, as `#offered` would find it in the list,
   * without building the list: the tool that model-safe name stands for,
   * when the run and this session's key may use it.
   */
  #offeredTool (name: string, options: RunOptions): { name: string, tool: Tool } | undefined {
    const tools = this.#deps.tools
    const tool = tools.resolve(name)
    if (tool === undefined || tools.modelName(tool.name) !== name) return undefined
    return offeredTools([tool], options.tools, this.owner.scopes, (n) => tools.quarantined(n)).length === 1 ? { name, tool } : undefined
  }

  /** Asks the client's user to approve a held call (elicitation); null when there is no usable answer. */
  async #ask (question: { tool: string, description: string, arguments: unknown }, signal: AbortSignal, relatedRequestId: string | number): Promise<UserDecision | null> {
    const message = `toolgate holds a call of the tool "${question.tool}" for your approval.\n${question.description}\nArguments: ${JSON.stringify(question.arguments)}`
    const answer = await this.server.elicitInput({ mode: 'form', message, requestedSchema: DECISION_SCHEMA }, { signal, timeout: this.#deps.approvalTtlMs, relatedRequestId })
    if (answer.action === 'decline') return { approve: false, reason: 'The user declined the call.' }
    if (answer.action !== 'accept' || typeof answer.content?.approve !== 'boolean') return null
    const reason = answer.content.reason
    return { approve: answer.content.approve, ...(typeof reason === 'string' && reason !== '' ? { reason } : {}) }
  }
}

/** What is wrong with the params of a `tools/call` or `logging/setLevel` request, or null (other messages are the SDK's to check). */
function invalidParams (message: JSONRPCMessage): string | null {
  if (!('method' in message)) return null
  const params = message.params as Record<string, unknown> | undefined
  if (message.method === 'tools/call') {
    if (typeof params !== 'object' || params === null || Array.isArray(params)) return 'tools/call needs params: {"name": "<tool>", "arguments": {...}}.'
    if (typeof params.name !== 'string') return 'tools/call needs params.name, the name of a tool, as a string.'
    const args = params.arguments
    if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) return 'tools/call params.arguments must be an object.'
    return null
  }
  if (message.method === 'logging/setLevel') {
    const level = params?.level
    if (typeof level !== 'string' || !(LEVELS as readonly string[]).includes(level)) return `logging/setLevel needs params.level, one of ${LEVELS.join(', ')}.`
  }
  return null
}

/** A tool as `tools/list` offers it: the definition's own description and schema, and hints from its flags. */
function describe (name: string, tool: Tool): Record<string, unknown> {
  return {
    name,
    ...(name === tool.name ? {} : { title: tool.name }),
    description: tool.description,
    // MCP wants an object schema; a definition that leaves the type out means one.
    inputSchema: tool.inputSchema.type === undefined ? { type: 'object', ...tool.inputSchema } : tool.inputSchema,
    annotations: { readOnlyHint: tool.readOnly, destructiveHint: !tool.readOnly, idempotentHint: tool.idempotent }
  }
}

/** The request's URL as the SDK's transport gives it to handlers (from the Host header). */
function requestUrl (raw: IncomingMessage): URL {
  try {
    return new URL(raw.url ?? '/', `http://${raw.headers.host ?? 'localhost'}`)
  } catch {
    return new URL(raw.url ?? '/', 'http://localhost')
  }
}

function isInitializeResult (result: unknown): result is { protocolVersion: string, _meta?: Record<string, unknown> } {
  return typeof result === 'object' && result !== null && 'protocolVersion' in result && 'serverInfo' in result
}
