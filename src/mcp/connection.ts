import type { Stream } from 'node:stream'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { CallToolResultSchema, CreateMessageRequestSchema, ElicitRequestSchema, ErrorCode, LoggingMessageNotificationSchema, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import type { Logger } from 'pino'
import * as z from 'zod/v4'
import type { McpServerDefinition } from '../../schemas/mcp-server.js'
import { type Clock, type TimerHandle, systemClock } from '../clock.js'
import type { ExecutorAnswer, ToolCallResult } from '../dispatch/executor.js'
import type { CallRelay } from '../dispatch/relays.js'
import type { ElicitationAnswer, ElicitationQuestion, QuestionSignals } from '../approvals/elicitations.js'
import { type BoundedCall, MAX_OTHER_RESPONSE_BYTES, ResponseTooLargeError, boundedFetch } from './bounded-fetch.js'
import { CallTimeout } from './call-timeout.js'
import { classifyCallError, describeFailure } from './classify.js'
import type { OAuthTokens } from './oauth.js'
import { DEFAULT_MAX_TOOLS, PROGRESS_TIMEOUT_FACTOR, type ImportSettings, boundedProblems } from './import.js'
import { leanFetch } from './lean-fetch.js'
import { ownSignals } from './request-signals.js'
import { SlicedStdioClientTransport } from './sliced-stdio.js'

/** A server's state as the admin API shows it. */
export type ServerState = 'connecting' | 'ready' | 'down'

/** What a connection asks of its manager. */
export interface ConnectionHooks {
  /** Registers the server's listed tools, as it sent them (`null`: stand-ins, the server was never reached); answers what could not be imported. */
  install (listed: readonly unknown[] | null): Promise<string[]>
  /** The state (or its lastError) changed. */
  changed (): void
}

export interface ReconnectPolicy {
  /** First delay after a failure. @default 500 */
  initialMs: number
  /** Longest delay between attempts. @default 30000 */
  maxMs: number
}

export const DEFAULT_RECONNECT: ReconnectPolicy = { initialMs: 500, maxMs: 30_000 }
/** A server's tools are listed at most once in this time (SPEC §19): a change notice in between waits for the next allowed listing. */
export const MIN_REFRESH_INTERVAL_MS = 5000
/** What a connection needs beyond its definition. */
export interface ConnectionOptions {
  clock?: Clock
  /** Longest tools/call answer read (TOOLGATE_MAX_EXECUTOR_RESPONSE_BYTES). */
  maxResponseBytes?: number
  /** The server's access token (its `oauth` settings), kept across reconnects. */
  oauth?: OAuthTokens | undefined
}
/** A tools/list page as toolgate reads it: each tool is checked on its own at import, so one bad tool does not hide the others. */
const LooseListToolsResult = z.looseObject({ tools: z.array(z.unknown()), nextCursor: z.string().optional() })
/** Pages of tools/list read at most: a server whose cursors never end is not followed forever. */
const MAX_PAGES = 100
/** Pages stop being read once the server has listed this many times the tools a server may offer. */
const LISTED_PER_ALLOWED = 10
/** Connecting and listing wait the server's call timeout, but at least MIN_SETUP_MS and at most MAX_SETUP_MS. */
const MIN_SETUP_MS = 10_000
const MAX_SETUP_MS = 30_000
const CLIENT_INFO = { name: 'toolgate', version: '0.1.0' }
/** What one call brings beside its arguments: its caller, and who answers the server's questions about it. */
export interface CallHooks {
  /** The caller to relay to (toolgate's own MCP endpoint). */
  relay?: CallRelay | undefined
  /** Puts a server's `elicitation/create` about this call to whoever answers it (SPEC section 18). */
  elicit?: ((question: ElicitationQuestion, signals: QuestionSignals) => Promise<ElicitationAnswer>) | undefined
  /** The fencing token of the call's tenant-scoped conflict key (SPEC section 17), sent in `_meta` as `toolgate/fencingToken`. */
  fencingToken?: string | undefined
  /** Told each progress report of this call (the batch's `call.progress` event). */
  progress?: ((update: { progress: number, total?: number | undefined }) => void) | undefined
  /** The longest the call may take in all while progress resets its timeout: the tool's executor.maxTimeoutMs. @default the server's maxTimeoutMs */
  maxTimeoutMs?: number | undefined
}
/** The `_meta` key a server may name its call by in a request about it: the call's operation id, as sent in tools/call. */
const OPERATION_META = 'toolgate/operationId'
/** How a Streamable HTTP session's requests are sent (lean-fetch.ts, request-signals.ts). */
const SEND = leanFetch(ownSignals(fetch))
/** A call to a server that is not connected: it was not sent. */
const UNAVAILABLE: ExecutorAnswer = Object.freeze({ kind: 'unsent', code: 'server_down' })
/**
 * The timeout the SDK gets for a tools/call: the longest a Node timer waits (about 24.8 days), so
 * that the call's own timeout (CallTimeout, which a server's question holds) always ends it first.
 */
const SDK_TIMEOUT_MS = 2 ** 31 - 1

/** A call in flight: what it brings, its timeout, and a signal aborted when it ends. */
interface InFlightCall { hooks: CallHooks, timeout: CallTimeout, ended: AbortSignal }

/**
 * One MCP server: its SDK client over stdio (toolgate starts, watches and
 * stops the process) or Streamable HTTP, connected once and reused by every
 * call; its tools listed on connect, on refresh and when the server says
 * they changed; reconnected with backoff when it is unreachable or lost.
 */
export class McpConnection {
  readonly definition: McpServerDefinition
  readonly settings: ImportSettings
  readonly #hooks: ConnectionHooks
  readonly #log: Logger
  readonly #reconnect: ReconnectPolicy
  readonly #clock: Clock
  readonly #maxResponseBytes: number
  readonly #oauth: OAuthTokens | undefined
  /** tools/call requests in flight over Streamable HTTP, by operation id: the bounded fetch stops one whose answer is too long. */
  readonly #inFlight = new Map<string, BoundedCall>()
  /** Calls in flight that have a caller to relay to, by operation id. */
  readonly #relayed = new Map<string, CallRelay>()
  /** Every call in flight, by operation id: a server's question is about one of them. */
  readonly #calls = new Map<string, InFlightCall>()
  #state: ServerState = 'connecting'
  #lastError: string | null = null
  #refreshedAt: string | null = null
  #client: Client | null = null
  #connecting: Promise<void> | null = null
  /** A refresh asked for and not started yet: later requests join it. */
  #pendingRefresh: Promise<void> | null = null
  #refreshing: Promise<void> | null = null
  #refreshTimer: { handle: TimerHandle, fire: () => void } | null = null
  /** A refresh asked for soon: the pending one does not wait for MIN_REFRESH_INTERVAL_MS. */
  #soon = false
  /** When the tools were last listed (clock time), or -Infinity. */
  #listedAt = -Infinity
  /** Imports run one after another, each after the previous one's compile. */
  #installing: Promise<void> = Promise.resolve()
  #timer: NodeJS.Timeout | null = null
  #failures = 0
  #imported = false
  #closed = false
  #pid: number | null = null
  /** The transport of the connection in use. */
  #transportInUse: Transport | null = null

  constructor (definition: McpServerDefinition, settings: ImportSettings, hooks: ConnectionHooks, log: Logger, reconnect: ReconnectPolicy = DEFAULT_RECONNECT, options: ConnectionOptions = {}) {
    this.definition = definition
    this.settings = settings
    this.#hooks = hooks
    this.#log = log
    this.#reconnect = reconnect
    this.#clock = options.clock ?? systemClock
    this.#maxResponseBytes = options.maxResponseBytes ?? 1024 * 1024
    this.#oauth = options.oauth
  }

  get state (): ServerState { return this.#state }
  get lastError (): string | null { return this.#lastError }
  get refreshedAt (): string | null { return this.#refreshedAt }
  /** The process id of a stdio server while it runs. */
  get pid (): number | null { return this.#pid }

  /** Connects now (or joins the attempt under way); never rejects: a failure leaves the server `down`, retried with backoff. */
  connect (): Promise<void> {
    if (this.#closed) return Promise.resolve()
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    this.#connecting ??= this.#attempt().finally(() => { this.#connecting = null })
    return this.#connecting
  }

  /**
   * Lists the tools again (all pages) and imports them; a server not
   * connected is connected first. At most one listing per
   * MIN_REFRESH_INTERVAL_MS: a request within that time is deferred to the
   * next allowed listing (requests in between join it), never dropped.
   * `soon` lists without that wait (after any listing under way): another
   * replica saw the server's tools change, and its own listings are
   * bounded so.
   */
  refresh (soon = false): Promise<void> {
    if (this.#client === null) return this.connect()
    this.#pendingRefresh ??= this.#deferredRefresh()
    if (soon) {
      this.#soon = true
      this.#wake()
    }
    return this.#pendingRefresh
  }

  async #deferredRefresh (): Promise<void> {
    // Returns to refresh() first, so that the promise is in place before it is cleared below.
    await Promise.resolve()
    await this.#refreshing?.catch(() => {})
    const wait = this.#listedAt + MIN_REFRESH_INTERVAL_MS - this.#clock.now()
    if (wait > 0 && !this.#soon) await this.#sleep(wait)
    this.#soon = false
    this.#pendingRefresh = null
    const client = this.#client
    if (client === null || this.#closed) return
    this.#refreshing = this.#listAndImport(client).finally(() => { this.#refreshing = null })
    await this.#refreshing
  }

  async #listAndImport (client: Client): Promise<void> {
    try {
      await this.#import(await this.#listAll(client))
    } catch (err) {
      // A lost connection is handled by onclose; the tools imported before stay.
      this.#setError(`tools/list failed: ${overflowOf(this.#transportInUse) ?? describeFailure(err)}`)
    }
  }

  /** Ends the wait of a deferred refresh now. */
  #wake (): void {
    const refresh = this.#refreshTimer
    if (refresh === null) return
    this.#clock.clearTimeout(refresh.handle)
    refresh.fire()
  }

  #sleep (ms: number): Promise<void> {
    return new Promise((resolve) => {
      const fire = (): void => { this.#refreshTimer = null; resolve() }
      this.#refreshTimer = { handle: this.#clock.setTimeout(fire, ms), fire }
    })
  }

  /**
   * One tools/call; never rejects. No connection is set up for a call, with
   * one exception: a Streamable HTTP server that answers 404 has lost the
   * session (the request was not processed), so a new session is
   * initialised and the call sent once more on it.
   */
  async call (remoteName: string, args: Record<string, unknown>, operationId: string, timeoutMs: number, trace?: Readonly<Record<string, string>>, hooks: CallHooks = {}): Promise<ExecutorAnswer> {
    const client = this.#client
    if (client === null) return UNAVAILABLE
    const first = await this.#send(client, remoteName, args, operationId, timeoutMs, trace, hooks)
    if (first !== SESSION_LOST) return first
    this.#log.warn({ mcpServer: this.settings.name }, 'MCP session lost by the server: initialising a new one')
    if (this.#client === client) {
      this.#client = null
      void client.close().catch(() => {})
      await this.connect()
    } else {
      await this.#connecting
    }
    const fresh = this.#client
    if (fresh === null) return { kind: 'unsent', code: 'session_lost' }
    const second = await this.#send(fresh, remoteName, args, operationId, timeoutMs, trace, hooks)
    if (second !== SESSION_LOST) return second
    this.#drop(fresh, 'the server lost the session again')
    return { kind: 'unsent', code: 'session_lost' }
  }

  async #send (client: Client, remoteName: string, args: Record<string, unknown>, operationId: string, timeoutMs: number, trace?: Readonly<Record<string, string>>, hooks: CallHooks = {}): Promise<ExecutorAnswer | typeof SESSION_LOST> {
    const { relay } = hooks
    const abort = new AbortController()
    const ended = new AbortController()
    // The call's timeout, reset by progress up to maxTimeoutMs in all (SPEC §18), and held while a
    // question of the server's waits for its answer. Toolgate's own timers, not the SDK's (which
    // cannot be held): they abort the request with the SDK's own timeout error, so the server is
    // sent notifications/cancelled and the call is a timeout (a write uncertain), as the SDK's would.
    const maxTotalMs = Math.max(timeoutMs, hooks.maxTimeoutMs ?? this.settings.maxTimeoutMs ?? PROGRESS_TIMEOUT_FACTOR * timeoutMs)
    const timeout = new CallTimeout(this.#clock, timeoutMs, maxTotalMs, (reason) => { abort.abort(reason) })
    this.#calls.set(operationId, { hooks, timeout, ended: ended.signal })
    this.#inFlight.set(operationId, { abort: (reason) => { abort.abort(reason) } })
    if (relay !== undefined) this.#relayed.set(operationId, relay)
    try {
      // `traceparent` and `tracestate` in `_meta`, where OpenTelemetry's MCP conventions carry them.
      const result = await client.request(
        { method: 'tools/call', params: { name: remoteName, arguments: args, _meta: hooks.fencingToken === undefined ? { ...trace, 'toolgate/operationId': operationId } : { ...trace, 'toolgate/operationId': operationId, 'toolgate/fencingToken': hooks.fencingToken } } },
        CallToolResultSchema,
        // Progress is asked for on every call (the SDK sends a progress token): each notification
        // resets the timeout (above), and reaches the caller when there is one to relay to.
        {
          timeout: SDK_TIMEOUT_MS,
          signal: abort.signal,
          onprogress: (p: { progress: number, total?: number, message?: string }) => {
            timeout.progress()
            relay?.progress(p)
            hooks.progress?.({ progress: p.progress, total: p.total })
          }
        }
      )
      if (this.definition.transport === 'stdio' && tooLong(result, this.#maxResponseBytes)) return { kind: 'unknown', code: 'response_too_large' }
      relay?.result(result as ToolCallResult)
      return { kind: 'tool_result', result: result as ToolCallResult }
    } catch (err) {
      if (err instanceof StreamableHTTPError && err.code === 404) return SESSION_LOST
      if (err instanceof ResponseTooLargeError) {
        this.#log.warn({ mcpServer: this.settings.name, limit: this.#maxResponseBytes }, 'MCP answer too large: not read')
      }
      const answer = classifyCallError(err)
      // Refused at connect: the server must be reached again.
      if (answer.kind === 'unsent' && answer.code !== 'not_connected') this.#drop(client, describeFailure(err))
      return answer
    } finally {
      timeout.stop()
      this.#inFlight.delete(operationId)
      this.#relayed.delete(operationId)
      this.#calls.delete(operationId)
      // Questions of the call still waiting are withdrawn: no answer to them can matter any more.
      ended.abort()
    }
  }

  /** The caller of the one call in flight that has one; none when several do (which one a message is for is unknown). */
  #onlyRelayed (): CallRelay | undefined {
    if (this.#relayed.size !== 1) return undefined
    for (const relay of this.#relayed.values()) return relay
    return undefined
  }

  /**
   * A server's question about a call: the one it names (by its operation id
   * in `_meta`), else the server's one call in flight; declined when it is
   * about none of them, or one that no one can answer. The call's timeout
   * is held while the question waits, and the question withdrawn if the
   * call ends first.
   */
  async #elicit (params: Record<string, unknown>, signal: AbortSignal): Promise<ElicitationAnswer> {
    const named = (params._meta as Record<string, unknown> | undefined)?.[OPERATION_META]
    const call = typeof named === 'string' ? this.#calls.get(named) : this.#calls.size === 1 ? this.#calls.values().next().value : undefined
    const elicit = call?.hooks.elicit
    const { message, requestedSchema } = params
    if (call === undefined || elicit === undefined || params.mode === 'url' || typeof message !== 'string' || typeof requestedSchema !== 'object' || requestedSchema === null) return { action: 'decline' }
    const resume = call.timeout.pause()
    try {
      return await elicit({ message, requestedSchema: requestedSchema as Record<string, unknown> }, { request: signal, call: call.ended })
    } finally {
      resume()
    }
  }

  /** Stops for good: no more reconnects, the process (stdio) is stopped. */
  async close (): Promise<void> {
    this.#closed = true
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    this.#wake()
    const client = this.#client
    this.#client = null
    await this.#connecting?.catch(() => {})
    await client?.close().catch(() => {})
  }

  async #attempt (): Promise<void> {
    this.#setState('connecting')
    const client = new Client(CLIENT_INFO, { capabilities: { sampling: {}, elicitation: { form: {} } } })
    // The SDK reports errors it recovers from here; failures that matter are met where they happen.
    client.onerror = () => {}
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => { void this.refresh() })
    // What the server sends during a call reaches the call's caller, when it has one (toolgate's own
    // MCP endpoint). Neither names its call: it is the one call in flight that has a caller.
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { this.#onlyRelayed()?.log(n.params) })
    client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
      const relay = this.#onlyRelayed()
      if (relay === undefined) throw new McpError(ErrorCode.InvalidRequest, 'Sampling is only available during a call whose caller is an MCP client that offers it.')
      return await relay.request('sampling/createMessage', request.params, extra.signal) as never
    })
    client.setRequestHandler(ElicitRequestSchema, async (request, extra) => await this.#elicit(request.params as Record<string, unknown>, extra.signal) as never)
    const setupOutput = new SetupOutput()
    let transport: Transport | null = null
    try {
      transport = this.#transport()
      if (transport instanceof StdioClientTransport) setupOutput.watch(transport.stderr)
      await client.connect(transport, { timeout: this.#setupMs() })
      if (transport instanceof StdioClientTransport) this.#pid = transport.pid
      const listed = await this.#listAll(client)
      setupOutput.stop()
      if (this.#closed) {
        await client.close().catch(() => {})
        return
      }
      this.#client = client
      this.#transportInUse = transport
      const used = transport
      client.onclose = () => { this.#drop(client, overflowOf(used) ?? 'the connection closed') }
      this.#failures = 0
      await this.#import(listed)
      this.#lastError = this.#importProblems
      this.#setState('ready')
      this.#log.info({ mcpServer: this.settings.name, tools: this.#toolCount }, 'MCP server ready')
    } catch (err) {
      await client.close().catch(() => {})
      if (this.#closed) return
      this.#down(`connecting failed: ${overflowOf(transport) ?? describeFailure(err)}${await setupOutput.said()}`)
    }
  }

  #importProblems: string | null = null
  #toolCount = 0

  /** Imports the last listing again (an admin approved quarantined tools); nothing when the server was never listed. */
  reimport (): Promise<void> {
    return this.#lastListed === null ? Promise.resolve() : this.#import(this.#lastListed)
  }

  #lastListed: readonly unknown[] | null = null

  /** Installs a listing after the one before it; the state changes when it is in place. */
  #import (listed: readonly unknown[]): Promise<void> {
    this.#lastListed = listed
    const run = async (): Promise<void> => {
      const problems = await this.#hooks.install(listed)
      this.#imported = true
      this.#toolCount = listed.length
      this.#refreshedAt = new Date(this.#clock.now()).toISOString()
      const shown = boundedProblems(problems)
      this.#importProblems = problems.length === 0 ? null : `not imported: ${shown.join('; ')}`
      if (problems.length > 0) this.#log.warn({ mcpServer: this.settings.name, problems: shown }, 'MCP tools not imported')
      this.#setError(this.#importProblems)
    }
    this.#installing = this.#installing.then(run, run)
    return this.#installing
  }

  /** The connection in use went away: calls are unavailable until it is back. */
  #drop (client: Client, why: string): void {
    if (this.#client !== client || this.#closed) return
    this.#client = null
    void client.close().catch(() => {})
    this.#down(why)
  }

  #down (why: string): void {
    if (!this.#imported) {
      void this.#hooks.install(null).then((problems) => {
        if (problems.length > 0) this.#log.warn({ mcpServer: this.settings.name, problems: boundedProblems(problems) }, 'MCP tools not imported')
      })
    }
    this.#lastError = why
    this.#setState('down')
    const delay = Math.min(this.#reconnect.maxMs, this.#reconnect.initialMs * 2 ** Math.min(this.#failures, 30))
    this.#failures++
    this.#log.warn({ mcpServer: this.settings.name, lastError: why, retryInMs: delay }, 'MCP server down')
    this.#timer = setTimeout(() => {
      this.#timer = null
      void this.connect()
    }, delay)
    this.#timer.unref()
  }

  #setState (state: ServerState): void {
    if (this.#state === state) return
    this.#state = state
    this.#hooks.changed()
  }

  #setError (error: string | null): void {
    this.#lastError = error
    this.#hooks.changed()
  }

  #setupMs (): number {
    return Math.min(Math.max(this.settings.timeoutMs, MIN_SETUP_MS), MAX_SETUP_MS)
  }

  async #listAll (client: Client): Promise<unknown[]> {
    this.#listedAt = this.#clock.now()
    const tools: unknown[] = []
    const cursors = new Set<string>()
    let cursor: string | undefined
    for (let page = 0; page < MAX_PAGES; page++) {
      const res = await client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, LooseListToolsResult, { timeout: this.#setupMs() })
      for (const tool of res.tools) tools.push(tool)
      // Far past what is imported: the rest is not read (planImport reports the tools over the limit).
      if (tools.length > LISTED_PER_ALLOWED * (this.settings.maxTools ?? DEFAULT_MAX_TOOLS)) break
      cursor = res.nextCursor
      if (cursor === undefined || cursors.has(cursor)) break
      cursors.add(cursor)
    }
    return tools
  }

  #transport (): Transport {
    const def = this.definition
    if (def.transport === 'stdio') {
      // Lines are bounded as Streamable HTTP answers are, and a long one (a tools/list of 20,000 tools) is parsed in slices.
      return new SlicedStdioClientTransport({
        command: def.command,
        args: def.args ?? [],
        ...(def.env === undefined ? {} : { env: def.env }),
        ...(def.cwd === undefined ? {} : { cwd: def.cwd }),
        // Piped: what a server says on stderr while it starts tells why it failed to (SetupOutput).
        stderr: 'pipe'
      }, Math.max(MAX_OTHER_RESPONSE_BYTES, this.#maxResponseBytes))
    }
    return new StreamableHTTPClientTransport(new URL(def.url), {
      // The bearer token goes under the bound: a 401 answered and retried with a new token is not read.
      // What the SDK sends goes as one undici dispatch (lean-fetch.ts); anything else by fetch, each request with a
      // signal of its own (request-signals.ts): the session's would gather a listener per request.
      fetch: boundedFetch(this.#maxResponseBytes, this.#inFlight, this.#oauth?.wrap(SEND) ?? SEND),
      ...(def.headers === undefined ? {} : { requestInit: { headers: def.headers } })
    })
  }
}

/** The most of a stdio server's start-up stderr kept for lastError. */
const SETUP_STDERR_CHARS = 1000
/** How long a server that failed to start may take to finish writing its stderr. */
const SETUP_STDERR_SETTLE_MS = 200

/**
 * The tail of what a stdio server writes on stderr until it is ready: why it
 * could not start ("cannot open /nope", a missing module). After that its
 * output may hold anything, arguments included, and is read and dropped.
 */
class SetupOutput {
  #text = ''
  #keeping = true
  #ended: Promise<void> = Promise.resolve()

  watch (stream: Stream | null): void {
    if (stream === null) return
    const readable = stream as unknown as NodeJS.ReadableStream
    readable.setEncoding('utf8')
    readable.on('data', (chunk: string) => {
      if (this.#keeping) this.#text = (this.#text + chunk).slice(-SETUP_STDERR_CHARS)
    })
    this.#ended = new Promise((resolve) => { readable.once('end', resolve); readable.once('close', resolve) })
  }

  stop (): void {
    this.#keeping = false
    this.#text = ''
  }

  /** `; its stderr: "…"` once the stream ended (or a moment passed), or '' when it said nothing. */
  async said (): Promise<string> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([this.#ended, new Promise<void>((resolve) => { timer = setTimeout(resolve, SETUP_STDERR_SETTLE_MS) })])
    clearTimeout(timer)
    const text = this.#text.trim()
    this.stop()
    return text === '' ? '' : `; its stderr: ${JSON.stringify(text)}`
  }
}

/** Why toolgate ended a stdio connection (a message over the limit), or null. */
function overflowOf (transport: Transport | null): string | null {
  return transport instanceof SlicedStdioClientTransport ? transport.overflow : null
}

/** What #send answers when the server no longer knows the session (HTTP 404): nothing was processed. */
const SESSION_LOST = Symbol('session lost')

/** Whether a result read whole (stdio: the SDK reads a line at a time) is over the bound. */
function tooLong (result: unknown, limit: number): boolean {
  return Buffer.byteLength(JSON.stringify(result), 'utf8') > limit
}
