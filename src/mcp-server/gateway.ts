/**
 * toolgate's own MCP endpoint (SPEC section 16): `/mcp` (a run per session)
 * and `/v1/runs/{runId}/mcp` (sessions bound to a run). Holds the sessions,
 * checks origins (and answers CORS), binds or creates runs on `initialize`,
 * refuses a request whose id is in flight in its session, and hands each
 * request to its session's Streamable HTTP transport.
 */
import { randomUUID } from 'node:crypto'
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import type { Logger } from 'pino'
import { Counter, Gauge, type Registry } from 'prom-client'
import { isInitializeRequest, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js'
import type { Principal } from '../auth/keys.js'
import type { Clock, TimerHandle } from '../clock.js'
import { ProblemError } from '../errors.js'
import type { RunService } from '../runs/service.js'
import type { ToolRegistry } from '../tools/registry.js'
import { PREFLIGHT_HEADERS, corsHeaders } from './cors.js'
import { type OriginPolicy, refusedOrigin } from './origin.js'
import { requestIdsOf } from './request-ids.js'
import { McpSession } from './session.js'
import type { OneCallTurns } from './turns.js'

/** JSON-RPC methods counted under their own name; every other one, and a request whose method cannot be read, is `other`. */
const COUNTED_METHODS = new Set([
  'initialize', 'ping', 'tools/list', 'tools/call', 'logging/setLevel',
  'notifications/initialized', 'notifications/cancelled', 'notifications/progress', 'notifications/roots/list_changed'
])
/** How often idle sessions are looked for. */
const SWEEP_MS = 60_000

export interface GatewayOptions {
  runs: RunService
  tools: ToolRegistry
  turns: OneCallTurns
  origins: OriginPolicy
  registry: Registry
  logger: Logger
  clock: Clock
  /** A session unused this long is closed (the run's TTL: its run is gone by then anyway). */
  idleMs: number
  approvalTtlMs: number
}

/** Where a request came from and which run its path names. */
export interface McpRequest {
  raw: IncomingMessage
  res: ServerResponse
  principal: Principal
  /** `/v1/runs/{runId}/mcp`: the run to bind to; null on `/mcp`. */
  boundRunId: string | null
  path: string
  /** The parsed JSON body of a POST; undefined for GET and DELETE. */
  body: unknown
  /** Takes the response from the web framework: the transport writes it from then on. */
  hijack: () => void
}

/** What the route answers itself, before the transport takes the request. */
export interface Refusal { status: number, code: number, message: string }

/** The answer to a CORS preflight: its headers (status 204), or a refusal (403). */
export type Preflight = { headers: Readonly<Record<string, string>> } | Refusal

export class McpGateway {
  readonly #o: GatewayOptions
  readonly #sessions = new Map<string, McpSession>()
  readonly #gauge: Gauge
  readonly #requests: Counter<'method' | 'outcome'>
  #sweep: TimerHandle | null
  readonly #unsubscribe: () => void

  constructor (o: GatewayOptions) {
    this.#o = o
    this.#gauge = new Gauge({ name: 'toolgate_mcp_sessions', help: "Open sessions of toolgate's own MCP endpoint.", registers: [o.registry] })
    this.#requests = new Counter({ name: 'toolgate_mcp_requests_total', help: "JSON-RPC messages to toolgate's MCP endpoint, by method and outcome (ok, error, tool_error, notification; refused: answered with an HTTP error status).", labelNames: ['method', 'outcome'], registers: [o.registry] })
    this.#sweep = o.clock.setInterval(() => { void this.#closeIdle() }, SWEEP_MS)
    this.#unsubscribe = o.tools.onChange(() => { for (const s of this.#sessions.values()) s.toolsChanged() })
  }

  /** How many sessions are open. */
  get size (): number {
    return this.#sessions.size
  }

  /**
   * Answers one HTTP request of the MCP endpoint, whose origin the route
   * has let through already (`refusedOrigin`, before the key is looked at).
   * Answers a refusal the route sends itself (as JSON-RPC), or null when the
   * transport answered.
   */
  async handle (r: McpRequest): Promise<Refusal | null> {
    const sessionId = r.raw.headers['mcp-session-id']
    if (typeof sessionId === 'string') {
      const session = this.#sessions.get(sessionId)
      // A session opened with another key (another tenant's, or one of the same tenant with other scopes), or on another path, does not exist for this caller.
      if (session === undefined || session.owner.keyId !== r.principal.keyId || session.owner.tenant !== r.principal.tenant || session.owner.path !== r.path) return refusal(404, 'Session not found')
      session.lastSeen = this.#o.clock.now()
      // Answers are matched to requests by id alone (request-ids.ts): an id in flight is refused before the transport maps it to this request.
      const ids = requestIdsOf(r.body)
      const taken = session.requests.taken(ids)
      if (taken !== undefined) {
        return refusal(400, session.requests.inFlight(taken)
          ? `Invalid Request: the id ${idText(taken)} is already in use by a request in flight in this session; send the request under another id.`
          : `Invalid Request: the id ${idText(taken)} is given to more than one request of this batch; give each request an id of its own.`, -32600)
      }
      const release = session.requests.hold(ids)
      try {
        if (session.lean(r.raw, r.res, r.body, r.hijack)) return null
        r.hijack()
        await session.transport.handleRequest(r.raw, r.res, r.body)
      } finally {
        release()
      }
      return null
    }
    if (r.raw.method !== 'POST' || !isInitializeRequest(r.body)) {
      return refusal(400, 'Bad Request: send initialize first, then the Mcp-Session-Id header it answered.')
    }
    return this.#open(r)
  }

  /** Counts a request of the endpoint answered with an HTTP error status (by the route, the transport or the HTTP layer before them). */
  refused (body: unknown): void {
    const method = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { method?: unknown }).method : undefined
    this.#requests.inc({ method: methodLabel(method), outcome: 'refused' })
  }

  /** The CORS headers of every answer to this request (cors.ts): none but `Vary` unless its origin may use the endpoint. */
  cors (headers: IncomingHttpHeaders): Readonly<Record<string, string>> {
    return corsHeaders({ origin: headers.origin, host: headers.host }, this.#o.origins)
  }

  /** The 403 of a request whose origin (or host) the DNS-rebinding rule refuses, before its key is looked at; null when it may go on. */
  refusedOrigin (headers: IncomingHttpHeaders): Refusal | null {
    const refused = refusedOrigin({ origin: headers.origin, host: headers.host }, this.#o.origins)
    return refused === null ? null : refusal(403, refused)
  }

  /** Answers a CORS preflight (`OPTIONS`): an origin the DNS-rebinding rule refuses is refused here too. */
  preflight (headers: IncomingHttpHeaders): Preflight {
    return this.refusedOrigin(headers) ?? { headers: PREFLIGHT_HEADERS }
  }

  /** Closes every session (the service stops). */
  async close (): Promise<void> {
    if (this.#sweep !== null) this.#o.clock.clearInterval(this.#sweep)
    this.#sweep = null
    this.#unsubscribe()
    await Promise.all([...this.#sessions.values()].map((s) => s.close().catch(() => {})))
    this.#sessions.clear()
    this.#gauge.set(0)
  }

  /** `initialize`: binds a new session to the path's run, or creates a run with the server's defaults. */
  async #open (r: McpRequest): Promise<Refusal | null> {
    // What the transport would refuse, refused before a run is created or bound (a refused initialize changes nothing).
    const accept = r.raw.headers.accept ?? ''
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
      return refusal(406, 'Not Acceptable: Client must accept both application/json and text/event-stream')
    }
    if ((r.raw.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase() !== 'application/json') {
      return refusal(415, 'Unsupported Media Type: Content-Type must be application/json')
    }
    const { tenant } = r.principal
    let runId: string
    let createdAt: number
    let ownsRun = false
    if (r.boundRunId !== null) {
      // Throws run_not_found (another tenant's run does not exist either); a run that is no longer active still binds: its calls say it ended.
      ;({ runId, createdAt } = await this.#o.runs.get(tenant, r.boundRunId))
    } else {
      const view = await this.#o.runs.create(tenant, {})
      runId = view.runId
      createdAt = Date.parse(view.createdAt)
      ownsRun = true
    }
    const session = new McpSession(
      { tenant, keyId: r.principal.keyId, scopes: r.principal.scopes, keyName: r.principal.name, runId, createdAt, ownsRun, path: r.path },
      {
        runs: this.#o.runs,
        tools: this.#o.tools,
        turns: this.#o.turns,
        approvalTtlMs: this.#o.approvalTtlMs,
        onNotification: (method) => this.#requests.inc({ method: methodLabel(method), outcome: 'notification' }),
        onAnswer: (method, answer) => this.#requests.inc({ method: methodLabel(method), outcome: outcomeOf(answer) }),
        onCancelled: (method) => this.#requests.inc({ method: methodLabel(method), outcome: 'cancelled' }),
        onInitialized: (s) => this.#added(s),
        onClosed: (s) => { void this.#closed(s) }
      },
      this.#o.clock.now(),
      randomUUID
    )
    await session.connect()
    r.hijack()
    r.res.setHeader('Toolgate-Run-Id', runId)
    await session.transport.handleRequest(r.raw, r.res, r.body)
    if (session.id === undefined || !this.#sessions.has(session.id)) {
      // The transport refused the initialize after all: nothing stays behind but the run, ended (its tenant's next run may take its place).
      await session.close().catch(() => {})
      if (ownsRun) await this.#o.runs.end(tenant, runId, createdAt).catch(() => {})
    }
    return null
  }

  #added (session: McpSession): void {
    if (session.id === undefined) return
    this.#sessions.set(session.id, session)
    this.#gauge.set(this.#sessions.size)
    this.#o.logger.info({ runId: session.owner.runId, ownsRun: session.owner.ownsRun }, 'MCP session opened')
  }

  /** The session ended (its DELETE, the idle sweep): its calls not started are cancelled by the transport's close, and a run it created ends. */
  async #closed (session: McpSession): Promise<void> {
    const id = session.id
    if (id === undefined || this.#sessions.get(id) !== session) return
    this.#sessions.delete(id)
    this.#gauge.set(this.#sessions.size)
    if (session.owner.ownsRun) {
      await this.#o.runs.end(session.owner.tenant, session.owner.runId, session.owner.createdAt).catch((err: unknown) => {
        if (!(err instanceof ProblemError && err.code === 'run_not_found')) this.#o.logger.warn({ runId: session.owner.runId, err: { message: (err as Error).message } }, 'MCP session closed, its run could not be ended')
      })
    }
    this.#o.logger.info({ runId: session.owner.runId }, 'MCP session closed')
  }

  async #closeIdle (): Promise<void> {
    const before = this.#o.clock.now() - this.#o.idleMs
    for (const session of [...this.#sessions.values()]) {
      if (session.lastSeen >= before) continue
      await this.#closed(session)
      await session.close().catch(() => {})
    }
  }
}

/** A refusal the route sends as a JSON-RPC error (counted by the route, as every answer with an error status is). */
function refusal (status: number, message: string, code = status === 404 ? -32001 : -32000): Refusal {
  return { status, code, message }
}

/** The label of a method: its own name when it is one of COUNTED_METHODS, else `other` (a client's method name never becomes a label). */
function methodLabel (method: unknown): string {
  return typeof method === 'string' && COUNTED_METHODS.has(method) ? method : 'other'
}

/** The outcome an answer is counted under. */
function outcomeOf (answer: JSONRPCMessage): 'ok' | 'error' | 'tool_error' {
  if ('error' in answer) return 'error'
  return 'result' in answer && (answer.result as { isError?: unknown }).isError === true ? 'tool_error' : 'ok'
}

/** An id as a refusal names it: JSON, so that 1 and "1" read apart, and never longer than 128 characters. */
function idText (id: RequestId): string {
  const text = JSON.stringify(id)
  return text.length > 128 ? `${text.slice(0, 127)}…` : text
}
