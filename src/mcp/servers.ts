import { performance } from 'node:perf_hooks'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Gauge, type Registry } from 'prom-client'
import type { Logger } from 'pino'
import { McpHttpServer, McpStdioServer, type McpServerDefinition, type McpServerView } from '../../schemas/mcp-server.js'
import type { Executor } from '../dispatch/executor.js'
import { InvalidToolError, type ToolRegistry } from '../tools/registry.js'
import { problemAt, schemaProblems } from '../tools/schema-problems.js'
import type { Tool } from '../model/tool.js'
import { DEFAULT_EXECUTOR_TIMEOUT_MS } from '../tools/registry.js'
import type { Clock } from '../clock.js'
import { DEFAULT_MAX_TOOLS, ImportPlan, PROGRESS_TIMEOUT_FACTOR, type ImportSettings, type ImportedDefinition, planPlaceholders, quotedName, withoutForeignDialect } from './import.js'
import { DEFAULT_RECONNECT, McpConnection, type ReconnectPolicy } from './connection.js'
import { McpToolExecutor, type OutputCheck } from './executor.js'
import { changesBetween, pinOf } from './pins.js'
import { MemoryToolPins, type PinChange, type PinListener, type ToolPin, type ToolPins } from '../store/tool-pins.js'
import type { CallRelays } from '../dispatch/relays.js'
import type { Elicitations } from '../approvals/elicitations.js'
import { type SecretEnvironment, oauthCredentials, oauthProblems, oauthView } from './oauth-credentials.js'
import { OAuthTokens } from './oauth.js'

/** A server definition that cannot be used; `problems` names each thing wrong. */
export class InvalidMcpServerError extends Error {
  readonly problems: string[]
  constructor (problems: string[]) {
    super(problems.join('; '))
    this.name = 'InvalidMcpServerError'
    this.problems = problems
  }
}

export interface McpServersOptions {
  tools: ToolRegistry
  /** The callers of calls that have one (toolgate's own MCP endpoint): what a server sends during a call reaches them. */
  relays?: CallRelays
  /** Who answers a server's questions about a call (SPEC section 18). */
  elicitations?: Elicitations
  logger: Logger
  metrics: Registry
  /** Origins a Streamable HTTP server's URL must belong to; null for any. */
  allowedOrigins: readonly string[] | null
  reconnect?: ReconnectPolicy
  clock?: Clock
  /** Most tools imported from one server (TOOLGATE_MCP_MAX_TOOLS). @default 1000 */
  maxTools?: number
  /** Longest tools/call answer read (TOOLGATE_MAX_EXECUTOR_RESPONSE_BYTES). @default 1 MiB */
  maxResponseBytes?: number
  /** Where tool definitions are pinned (shared by replicas on a shared store). @default this process's memory */
  pins?: ToolPins
  /** Where an `oauth` setting's `*Env` secrets are read (toolgate's environment). @default none */
  env?: SecretEnvironment
}

/** A tool as the pins route shows it (SPEC §18). */
export interface PinView {
  name: string
  serverToolName: string
  state: 'pinned' | 'quarantined'
  pinned: Record<string, unknown> | null
  current: Record<string, unknown>
  changes: string[]
}

/** A tool of a pinned server whose listed definition is not its pin (or that has none). */
interface Held { name: string, current: ToolPin, pinned: ToolPin | null }

/** What the last import of a server made of pins: each imported tool's current pin, and the tools held back. */
interface PinState { current: Map<string, { name: string, pin: ToolPin }>, held: Map<string, Held> }

/** An approval that names tools the server does not hold in quarantine. */
export class NotQuarantinedError extends Error {
  readonly names: string[]
  constructor (names: string[]) {
    super(`not in quarantine: ${names.join(', ')}`)
    this.name = 'NotQuarantinedError'
    this.names = names
  }
}

/** An import compiles tools for at most this long before it lets other work run. */
const COMPILE_SLICE_MS = 10
/** A compiled tool, kept while its definition does not change: a refresh recompiles only what changed. */
interface Compiled { key: string, tool: Tool }

const checkStdio = TypeCompiler.Compile(McpStdioServer)
const checkHttp = TypeCompiler.Compile(McpHttpServer)
/** Compiles overrides alone, to find their problems before any server is reached; it is never called. */
const PROBE: Executor = { send: () => { throw new Error('probe') } }

/**
 * The MCP servers toolgate imports tools from (SPEC section 12): one
 * connection each, their tools in the tool registry under the server's
 * name, their state on `toolgate_mcp_server_up{server}`.
 */
export class McpServers {
  readonly #opts: McpServersOptions
  readonly #servers = new Map<string, McpConnection>()
  readonly #up: Gauge<'server'>
  readonly #waiters: Array<{ name: string, until: (view: McpServerView) => boolean, resolve: () => void }> = []
  readonly #compiled = new WeakMap<McpConnection, Map<string, Compiled>>()
  readonly #pinState = new WeakMap<McpConnection, PinState>()
  readonly #pins: ToolPins
  readonly #quarantinedGauge: Gauge<'server'>
  /** Each server's reading of its pins again, one at a time (see #recheck). */
  readonly #rechecks = new WeakMap<McpConnection, () => Promise<void>>()
  /** Listings under way because another replica announced a quarantine: they announce none of their own. */
  readonly #echoes = new WeakMap<McpConnection, number>()
  /** This replica's hearing of the others' announcements, from the first pinned server on. */
  readonly #heard: PinListener = (server, change) => { this.#hear(server, change) }
  #stopHearing: (() => void) | null = null

  constructor (opts: McpServersOptions) {
    this.#opts = opts
    this.#up = new Gauge({ name: 'toolgate_mcp_server_up', help: 'Whether an MCP server is connected and its tools imported (1) or not (0).', labelNames: ['server'], registers: [opts.metrics] })
    this.#quarantinedGauge = new Gauge({ name: 'toolgate_tools_quarantined', help: 'Tools of an MCP server held in quarantine: changed or new since its tools were pinned.', labelNames: ['server'], registers: [opts.metrics] })
    this.#pins = opts.pins ?? new MemoryToolPins()
  }

  /** The server's pinned and quarantined tools, with what differs (SPEC §18); undefined for an unknown server. */
  async pinsOf (name: string): Promise<PinView[] | undefined> {
    const conn = this.#servers.get(name)
    if (conn === undefined) return undefined
    let stored = await this.#pins.pinsOf(name)
    // An approval (or a new pin) made on another replica and not heard of yet: this replica brings its quarantine in line first.
    if (this.#outOfLine(conn, stored)) {
      await this.#recheck(conn)
      if (this.#servers.get(name) !== conn) return undefined
      stored = await this.#pins.pinsOf(name)
    }
    const state = this.#pinState.get(conn)
    const views: PinView[] = []
    for (const [remote, { name: imported, pin }] of state?.current ?? []) {
      const pinned = stored.get(remote) ?? pin
      views.push({ name: imported, serverToolName: remote, state: 'pinned', pinned: pinned.definition, current: pin.definition, changes: [] })
    }
    for (const [remote, held] of state?.held ?? []) {
      const pinned = stored.get(remote) ?? held.pinned
      views.push({
        name: held.name,
        serverToolName: remote,
        state: 'quarantined',
        pinned: pinned?.definition ?? null,
        current: held.current.definition,
        changes: pinned === null ? ['a new tool: the server had no such tool when its tools were pinned'] : changesBetween(pinned.definition, held.current.definition)
      })
    }
    return views.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  /**
   * Pins the current definitions of quarantined tools (by imported name) and
   * imports them; throws NotQuarantinedError naming any that are not held.
   */
  async approve (name: string, names: readonly string[]): Promise<PinView[] | undefined> {
    const conn = this.#servers.get(name)
    if (conn === undefined) return undefined
    const held = this.#pinState.get(conn)?.held ?? new Map<string, Held>()
    const byName = new Map([...held].map(([remote, h]) => [h.name, { remote, h }]))
    const missing = names.filter((n) => !byName.has(n))
    if (missing.length > 0) throw new NotQuarantinedError(missing.slice(0, 10).map(quotedName))
    const approved = new Map<string, ToolPin>()
    for (const n of names) {
      const { remote, h } = byName.get(n)!
      approved.set(remote, { ...h.current, pinnedAt: this.#opts.clock?.now() ?? Date.now() })
    }
    await this.#pins.approve(name, approved)
    this.#opts.logger.info({ mcpServer: name, tools: names.slice(0, 10).map(quotedName), approved: names.length }, 'MCP tools approved')
    await this.#announce(name, 'approved')
    await conn.reimport()
    return await this.pinsOf(name)
  }

  /** Checks a definition whole, or throws InvalidMcpServerError listing every problem. */
  validate (input: unknown): McpServerDefinition {
    const transport = (input as { transport?: unknown } | null)?.transport
    const check = transport === 'stdio' ? checkStdio : transport === 'streamableHttp' ? checkHttp : null
    if (check === null) throw new InvalidMcpServerError(['/transport: must be stdio or streamableHttp'])
    // The schema's problems and the others together: an invalid file is reported with every problem listed.
    const problems = check.Check(input) ? [] : schemaProblems(check, input)
    const def = input as McpServerDefinition
    if (def.transport === 'streamableHttp' && typeof def.url === 'string' && !problemAt(problems, '/url')) {
      let url: URL | undefined
      try { url = new URL(def.url) } catch { problems.push('/url: not a valid URL') }
      if (url !== undefined) {
        if (url.protocol !== 'http:' && url.protocol !== 'https:') problems.push('/url: must be http or https')
        else if (url.username !== '' || url.password !== '') problems.push('/url: must not carry credentials (use headers)')
        else if (this.#opts.allowedOrigins !== null && !this.#opts.allowedOrigins.includes(url.origin)) problems.push(`/url: origin ${url.origin} is not in TOOLGATE_EXECUTOR_ALLOWED_ORIGINS`)
      }
    }
    if (def.transport === 'streamableHttp' && def.oauth !== undefined && !problemAt(problems, '/oauth')) {
      for (const p of oauthProblems(def.oauth, this.#opts.env ?? {})) problems.push(p)
      if (Object.keys(def.headers ?? {}).some((h) => h.toLowerCase() === 'authorization')) problems.push('/headers/authorization: not with oauth (toolgate sends the access token)')
    }
    const overrides = problemAt(problems, '/tools') || def.tools === null || typeof def.tools !== 'object' ? {} : def.tools
    for (const [name, override] of Object.entries(overrides)) {
      try {
        this.#opts.tools.compile({ name: 'override.probe', inputSchema: { type: 'object' }, executor: { url: 'mcp://probe' }, ...override }, PROBE)
      } catch (err) {
        if (!(err instanceof InvalidToolError)) throw err
        for (const p of err.problems) problems.push(`/tools/${name}${p.startsWith('/') ? '' : ' '}${p}`)
      }
    }
    if (problems.length > 0) throw new InvalidMcpServerError(problems)
    return def
  }

  /**
   * The tools file's servers: all are checked first (every problem listed,
   * nothing started), then connected at once. Answers when each has been
   * tried once; a server that could not be reached is `down` and retried.
   */
  async startAll (inputs: readonly unknown[]): Promise<void> {
    const problems: string[] = []
    const defs: McpServerDefinition[] = []
    const names = new Set<string>()
    for (const [i, input] of inputs.entries()) {
      const name = (input as { name?: unknown } | null)?.name
      const label = typeof name === 'string' ? `mcpServers[${i}] (${name})` : `mcpServers[${i}]`
      if (typeof name === 'string' && names.has(name)) problems.push(`${label}: duplicate name`)
      try {
        defs.push(this.validate(input))
        if (typeof name === 'string') names.add(name)
      } catch (err) {
        if (!(err instanceof InvalidMcpServerError)) throw err
        for (const p of err.problems) problems.push(`${label} ${p}`)
      }
    }
    if (problems.length > 0) throw new InvalidMcpServerError(problems)
    await Promise.all(defs.map(async (def) => { await this.#add(def) }))
  }

  /** Adds or replaces a server and tries it once; answers its view and whether it was new. */
  async put (input: unknown): Promise<{ view: McpServerView, created: boolean }> {
    const def = this.validate(input)
    const created = !this.#servers.has(def.name)
    await this.#add(def)
    return { view: this.view(def.name)!, created }
  }

  /** Stops a server and removes its tools. */
  async delete (name: string): Promise<boolean> {
    const conn = this.#servers.get(name)
    if (conn === undefined) return false
    this.#servers.delete(name)
    await conn.close()
    this.#opts.tools.replaceOwned(name, [])
    this.#opts.tools.setQuarantined(name, [])
    this.#up.remove({ server: name })
    this.#quarantinedGauge.remove({ server: name })
    this.#opts.logger.info({ mcpServer: name }, 'MCP server removed')
    return true
  }

  /** Lists the server's tools again (connecting it first if it is not); answers its view. */
  async refresh (name: string): Promise<McpServerView | undefined> {
    const conn = this.#servers.get(name)
    if (conn === undefined) return undefined
    await conn.refresh()
    return this.view(name)
  }

  /** Resolves when the server's view satisfies `until` (at once if it does): lets a caller wait for an event, not a time. */
  when (name: string, until: (view: McpServerView) => boolean): Promise<void> {
    const view = this.view(name)
    if (view !== undefined && until(view)) return Promise.resolve()
    return new Promise((resolve) => { this.#waiters.push({ name, until, resolve }) })
  }

  /** Resolves when the server is in `state`. */
  whenState (name: string, state: 'connecting' | 'ready' | 'down'): Promise<void> {
    return this.when(name, (v) => v.state === state)
  }

  /** The connection of a server, for tests and the bench. */
  connection (name: string): McpConnection | undefined {
    return this.#servers.get(name)
  }

  view (name: string): McpServerView | undefined {
    const conn = this.#servers.get(name)
    return conn === undefined ? undefined : viewOf(conn, this.#opts.tools)
  }

  list (): McpServerView[] {
    return [...this.#servers.keys()].sort().map((name) => this.view(name)!)
  }

  async close (): Promise<void> {
    this.#stopHearing?.()
    this.#stopHearing = null
    const conns = [...this.#servers.values()]
    this.#servers.clear()
    await Promise.all(conns.map(async (c) => { await c.close() }))
  }

  async #add (def: McpServerDefinition): Promise<void> {
    const previous = this.#servers.get(def.name)
    if (previous !== undefined) {
      this.#servers.delete(def.name)
      await previous.close()
      this.#opts.tools.replaceOwned(def.name, [])
    }
    const settings = settingsOf(def, this.#opts.maxTools ?? DEFAULT_MAX_TOOLS)
    const log = this.#opts.logger
    const conn: McpConnection = new McpConnection(def, settings, {
      install: (listed) => this.#install(conn, listed),
      changed: () => {
        if (this.#servers.get(def.name) !== conn) return
        this.#up.set({ server: def.name }, conn.state === 'ready' ? 1 : 0)
        for (let i = this.#waiters.length - 1; i >= 0; i--) {
          const w = this.#waiters[i]!
          if (w.name === def.name && w.until(this.view(def.name)!)) {
            this.#waiters.splice(i, 1)
            w.resolve()
          }
        }
      }
    }, log, this.#opts.reconnect ?? DEFAULT_RECONNECT, {
      ...(this.#opts.clock === undefined ? {} : { clock: this.#opts.clock }),
      ...(this.#opts.maxResponseBytes === undefined ? {} : { maxResponseBytes: this.#opts.maxResponseBytes }),
      oauth: def.transport === 'streamableHttp' && def.oauth !== undefined
        ? new OAuthTokens(oauthCredentials(def.oauth, this.#opts.env ?? {}), def.url, { timeoutMs: settings.timeoutMs, ...(this.#opts.clock === undefined ? {} : { clock: this.#opts.clock }) })
        : undefined
    })
    this.#servers.set(def.name, conn)
    this.#rechecks.set(conn, oneAtATime(() => this.#recheckNow(conn)))
    if (settings.pinning) this.#stopHearing ??= this.#pins.onChange(this.#heard)
    this.#up.set({ server: def.name }, 0)
    this.#quarantinedGauge.set({ server: def.name }, 0)
    log.info({ mcpServer: def.name, transport: def.transport }, 'MCP server added')
    await conn.connect()
  }

  /**
   * Pins a server's tools the first time it is imported, and holds back in
   * quarantine each tool whose definition is not its pin, or that has none
   * (SPEC §18); answers the tools that may be imported. Without the pins
   * (the store is unreachable) nothing new is imported: fail closed.
   */
  async #quarantine (conn: McpConnection, definitions: ImportedDefinition[], problems: string[]): Promise<ImportedDefinition[]> {
    const server = conn.settings.name
    const now = this.#opts.clock?.now() ?? Date.now()
    const current = new Map<string, ToolPin>()
    if (!await this.#inSlices(conn, definitions, (d) => { current.set(d.remoteName, pinOf(d.listed, now)) })) return []
    let pins: Map<string, ToolPin>
    try {
      pins = await this.#pins.pinFirst(server, current)
    } catch {
      problems.push('the pins could not be read from the store: no tool was imported')
      return []
    }
    const before = this.#pinState.get(conn)?.held ?? new Map<string, Held>()
    const state: PinState = { current: new Map(), held: new Map() }
    const kept: ImportedDefinition[] = []
    let newlyHeld = false
    for (const d of definitions) {
      const pin = current.get(d.remoteName)!
      const pinned = pins.get(d.remoteName) ?? null
      const name = d.definition.name as string
      if (pinned !== null && pinned.hash === pin.hash) {
        state.current.set(d.remoteName, { name, pin })
        kept.push(d)
        continue
      }
      state.held.set(d.remoteName, { name, current: pin, pinned })
      if (before.get(d.remoteName)?.current.hash !== pin.hash) {
        newlyHeld = true
        this.#opts.logger.warn({ event: 'tool.quarantined', mcpServer: server, tool: quotedName(name), why: pinned === null ? 'new' : 'changed' }, 'MCP tool quarantined')
      }
    }
    this.#pinState.set(conn, state)
    this.#opts.tools.setQuarantined(server, [...state.held.values()].map((h) => h.name), this.#rechecks.get(conn))
    this.#quarantinedGauge.set({ server }, state.held.size)
    // The other replicas list the server again: their listing may be older than this one. A listing they asked for tells no one, or two replicas of a server that changes at every listing would keep each other listing.
    if (newlyHeld && (this.#echoes.get(conn) ?? 0) === 0) void this.#announce(server, 'quarantined')
    if (state.held.size > 0) problems.push(`${state.held.size} tools in quarantine until an admin approves them (GET /v1/mcp-servers/${server}/pins)`)
    return kept
  }

  /** Tells the other replicas (failing quietly: they read the store themselves when a call needs it). */
  async #announce (server: string, change: PinChange): Promise<void> {
    try {
      await this.#pins.announce(server, change, this.#heard)
    } catch (err) {
      this.#opts.logger.warn({ mcpServer: server, change, err: { message: (err as Error).message } }, 'MCP pins: the other replicas could not be told')
    }
  }

  /** Another replica approved tools of a server (read its pins again) or held one back (list it again); `null`: every server's pins. */
  #hear (server: string | null, change: PinChange): void {
    const conns = server === null ? [...this.#servers.values()] : [this.#servers.get(server)]
    for (const conn of conns) {
      if (conn === undefined || !conn.settings.pinning) continue
      if (change === 'approved') {
        void this.#recheck(conn)
        continue
      }
      // A server that is down lists its tools when it is back (a notice does not hurry its reconnection).
      if (conn.state !== 'ready') continue
      this.#echoes.set(conn, (this.#echoes.get(conn) ?? 0) + 1)
      void conn.refresh(true).finally(() => { this.#echoes.set(conn, this.#echoes.get(conn)! - 1) })
    }
  }

  /** Reads the server's pins again and brings its quarantine in line with them (one reading at a time; see oneAtATime). */
  #recheck (conn: McpConnection): Promise<void> {
    return this.#rechecks.get(conn)?.() ?? Promise.resolve()
  }

  async #recheckNow (conn: McpConnection): Promise<void> {
    if (!this.#pinState.has(conn)) return
    let stored: Map<string, ToolPin>
    try {
      stored = await this.#pins.pinsOf(conn.settings.name)
    } catch {
      // The store cannot be read: what is held stays held.
      return
    }
    if (this.#servers.get(conn.settings.name) === conn && this.#outOfLine(conn, stored)) await conn.reimport()
  }

  /**
   * Whether the server's pins say other than its last import did: a held
   * tool whose current definition, as this replica listed it, is now
   * pinned, or an imported tool whose pin was replaced. A tool approved
   * with another definition than the one this replica listed stays held.
   */
  #outOfLine (conn: McpConnection, stored: ReadonlyMap<string, ToolPin>): boolean {
    const state = this.#pinState.get(conn)
    if (state === undefined) return false
    for (const [remote, held] of state.held) if (stored.get(remote)?.hash === held.current.hash) return true
    for (const [remote, { pin }] of state.current) if (stored.get(remote)?.hash !== pin.hash) return true
    return false
  }

  /**
   * The check of a tool's outputSchema, compiled as an input schema is (the
   * same dialect, pattern and cost limits), so that checking an answer is
   * bounded as checking arguments is; throws InvalidToolError naming the
   * outputSchema's problems. A check that goes to the validation thread
   * waits its turn there as the calling tenant's, so one tenant's backlog of
   * large answers from a server does not hold another tenant's calls to it;
   * a check with no tenant (none today) as the server's.
   */
  #outputCheck (schema: Record<string, unknown>, server: string): OutputCheck {
    const serverOwner = `mcp:${server}`
    try {
      const probe = this.#opts.tools.compile({ name: 'output.probe', inputSchema: withoutForeignDialect(schema), executor: { url: 'mcp://probe' } }, PROBE)
      return (structured, owner) => {
        const verdict = probe.validate(structured, undefined, owner ?? serverOwner)
        return verdict instanceof Promise ? verdict.then((v) => v.valid) : verdict.valid
      }
    } catch (err) {
      if (!(err instanceof InvalidToolError)) throw err
      throw new InvalidToolError(err.problems.map((p) => p.replace(/^\/inputSchema/, '/outputSchema')))
    }
  }

  /**
   * Runs `step` on each item, in slices of at most about COMPILE_SLICE_MS
   * between which other work runs; false when the server was replaced or
   * removed meanwhile (the rest is not done).
   */
  async #inSlices<T> (conn: McpConnection, items: Iterable<T>, step: (item: T) => void): Promise<boolean> {
    let slice = performance.now()
    for (const item of items) {
      if (performance.now() - slice > COMPILE_SLICE_MS) {
        await nextTurn()
        if (this.#servers.get(conn.settings.name) !== conn) return false
        slice = performance.now()
      }
      step(item)
    }
    return true
  }

  /**
   * Compiles and registers a server's tools in place of its previous ones;
   * answers what was left out and why. A tool whose definition did not
   * change keeps its compiled form; the others are compiled in slices of
   * COMPILE_SLICE_MS, letting other work run between slices, so that a long
   * list never holds the event loop; so are the plan and the pins.
   */
  async #install (conn: McpConnection, listed: readonly unknown[] | null): Promise<string[]> {
    if (this.#servers.get(conn.settings.name) !== conn) return []
    const { settings } = conn
    // The listing was parsed in turns before: the plan, the pins and the compiles are done in slices of their own.
    let plan = { definitions: planPlaceholders(settings), problems: [] as string[] }
    if (listed !== null) {
      const planner = new ImportPlan(settings)
      if (!await this.#inSlices(conn, listed, (entry) => { planner.add(entry) })) return []
      plan = planner.result()
    }
    await nextTurn()
    if (this.#servers.get(settings.name) !== conn) return []
    const problems = plan.problems
    if (listed !== null && settings.pinning) {
      plan.definitions = await this.#quarantine(conn, plan.definitions, problems)
      if (this.#servers.get(settings.name) !== conn) return []
    }
    const before = this.#compiled.get(conn) ?? new Map<string, Compiled>()
    const after = new Map<string, Compiled>()
    const tools: Tool[] = []
    const compiled = await this.#inSlices(conn, plan.definitions, ({ remoteName, definition, listed: tool }) => {
      const listedOutput = tool.outputSchema
      const key = listedOutput === undefined ? JSON.stringify(definition) : JSON.stringify([definition, listedOutput])
      const kept = before.get(remoteName)
      if (kept !== undefined && kept.key === key) {
        tools.push(kept.tool)
        after.set(remoteName, kept)
        return
      }
      try {
        const output = listedOutput === undefined ? undefined : this.#outputCheck(listedOutput, conn.settings.name)
        const tool = this.#opts.tools.compile(definition, new McpToolExecutor(conn, remoteName, output, this.#opts.relays, this.#opts.elicitations))
        tools.push(tool)
        after.set(remoteName, { key, tool })
      } catch (err) {
        if (!(err instanceof InvalidToolError)) throw err
        problems.push(`${quotedName(remoteName)}: ${err.problems.slice(0, 3).join(', ')}`)
      }
    })
    if (!compiled) return []
    this.#compiled.set(conn, after)
    const { clashes } = this.#opts.tools.replaceOwned(settings.name, tools)
    for (const clash of clashes) problems.push(clash)
    return problems
  }
}

/**
 * Runs `task` one at a time: asked while it runs, it runs once more after
 * (those asking meanwhile share that run), so a caller always gets a run
 * that started after it asked.
 */
function oneAtATime (task: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | null = null
  let next: Promise<void> | null = null
  const start = (): Promise<void> => {
    const run: Promise<void> = task().catch(() => {}).then(() => { if (running === run) running = null })
    running = run
    return run
  }
  return () => {
    // A next run not started yet starts after this caller asked: it is joined.
    if (next !== null) return next
    if (running === null) return start()
    next = running.then(() => {
      next = null
      return start()
    })
    return next
  }
}

function settingsOf (def: McpServerDefinition, maxTools: number): ImportSettings {
  return {
    maxTools,
    pinning: (def.pinning ?? (def.trust === 'trusted' ? 'off' : 'on')) === 'on',
    name: def.name,
    trust: def.trust ?? 'untrusted',
    prefix: def.prefix ?? `${def.name}_`,
    include: def.include ?? null,
    exclude: def.exclude ?? [],
    timeoutMs: def.timeoutMs ?? DEFAULT_EXECUTOR_TIMEOUT_MS,
    maxTimeoutMs: def.maxTimeoutMs ?? PROGRESS_TIMEOUT_FACTOR * (def.timeoutMs ?? DEFAULT_EXECUTOR_TIMEOUT_MS),
    overrides: def.tools ?? {}
  }
}

function viewOf (conn: McpConnection, tools: ToolRegistry): McpServerView {
  const def = conn.definition
  const s = conn.settings
  const view: McpServerView = {
    name: def.name,
    transport: def.transport,
    trust: s.trust,
    prefix: s.prefix,
    pinning: s.pinning ? 'on' : 'off',
    timeoutMs: s.timeoutMs,
    maxTimeoutMs: s.maxTimeoutMs ?? PROGRESS_TIMEOUT_FACTOR * s.timeoutMs,
    overrides: s.overrides as Record<string, Record<string, unknown>>,
    state: conn.state,
    lastError: conn.lastError,
    tools: tools.list().filter((t) => tools.ownerOf(t.name) === def.name).map((t) => t.name),
    refreshedAt: conn.refreshedAt
  }
  if (def.transport === 'streamableHttp') {
    // A query may carry a key: the view shows where the server is, not how it is reached.
    view.url = urlWithoutQuery(def.url)
    if (def.headers !== undefined) view.headerNames = Object.keys(def.headers)
    if (def.oauth !== undefined) view.oauth = oauthView(def.oauth) as NonNullable<McpServerView['oauth']>
  } else {
    view.command = def.command
  }
  if (s.include !== null) view.include = [...s.include]
  if (s.exclude.length > 0) view.exclude = [...s.exclude]
  return view
}

function urlWithoutQuery (url: string): string {
  const u = new URL(url)
  return u.search === '' ? url : `${u.origin}${u.pathname}`
}
