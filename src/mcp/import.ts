import { ToolDefinition as ToolDefinitionSchema } from '../../schemas/tool.js'
import type { McpToolOverride } from '../../schemas/mcp-server.js'

/** A tool as a server's tools/list describes it (the fields toolgate reads). */
export interface ListedTool {
  name: string
  title?: string | undefined
  description?: string | undefined
  inputSchema: Record<string, unknown>
  outputSchema?: Record<string, unknown> | undefined
  annotations?: { readOnlyHint?: boolean | undefined, idempotentHint?: boolean | undefined, [key: string]: unknown } | undefined
}

/** What importing needs to know of a server: its definition with every default filled in. */
/** A call whose server reports progress may take this many times its timeout in all, unless maxTimeoutMs says otherwise. */
export const PROGRESS_TIMEOUT_FACTOR = 10

export interface ImportSettings {
  name: string
  trust: 'trusted' | 'untrusted'
  prefix: string
  include: readonly string[] | null
  exclude: readonly string[]
  timeoutMs: number
  /** Longest a call may take in all while progress resets its timeout (SPEC §18). @default 10 times timeoutMs */
  maxTimeoutMs?: number
  overrides: Readonly<Record<string, McpToolOverride>>
  /** Whether the server's tools are pinned and changes quarantined (SPEC §18). @default false */
  pinning?: boolean
  /** Most tools imported from the server (TOOLGATE_MCP_MAX_TOOLS). @default DEFAULT_MAX_TOOLS */
  maxTools?: number
}

/** One tool to register: its definition, and its name on the server. */
export interface ImportedDefinition { remoteName: string, definition: Record<string, unknown>, listed: ListedTool }

/** Most tools imported from one server unless TOOLGATE_MCP_MAX_TOOLS says otherwise. */
export const DEFAULT_MAX_TOOLS = 1000
const NAME = /^[A-Za-z0-9_.-]{1,64}$/
const MAX_DESCRIPTION = 8192
/** Longest server-supplied name quoted in lastError and the log. */
const MAX_QUOTED_NAME = 64
/** Problems listed in lastError and the log; the rest are counted. */
const MAX_LISTED_PROBLEMS = 10

/** A server-supplied name as toolgate quotes it: at most MAX_QUOTED_NAME characters. */
export function quotedName (name: string): string {
  return name.length > MAX_QUOTED_NAME ? `${name.slice(0, MAX_QUOTED_NAME)}… (${name.length} characters)` : name
}

/** The first problems, and how many more there are: a lastError or log line of bounded length. */
export function boundedProblems (problems: readonly string[]): string[] {
  if (problems.length <= MAX_LISTED_PROBLEMS) return [...problems]
  return [...problems.slice(0, MAX_LISTED_PROBLEMS), `and ${problems.length - MAX_LISTED_PROBLEMS} more`]
}

/**
 * One entry of a tools/list page, checked on its own (the page is not
 * checked as a whole, so one bad tool does not hide the others): a problem
 * in toolgate's words, or the tool.
 */
export function readListedTool (entry: unknown): ListedTool | string {
  if (!isRecord(entry) || typeof entry.name !== 'string' || entry.name === '') return 'a tool without a name'
  const name = quotedName(entry.name)
  const schema = entry.inputSchema
  if (!isRecord(schema) || schema.type !== 'object') return `${name}: its inputSchema is not an object schema`
  if (entry.outputSchema !== undefined && (!isRecord(entry.outputSchema) || entry.outputSchema.type !== 'object')) return `${name}: its outputSchema is not an object schema`
  const tool: ListedTool = { name: entry.name, inputSchema: schema }
  if (typeof entry.title === 'string') tool.title = entry.title
  if (typeof entry.description === 'string') tool.description = entry.description
  if (isRecord(entry.outputSchema)) tool.outputSchema = entry.outputSchema
  if (isRecord(entry.annotations)) tool.annotations = entry.annotations
  return tool
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
/** Whether tool definitions have the retry-safety field an `idempotentHint` maps to. */
const HAS_IDEMPOTENT = 'idempotent' in ToolDefinitionSchema.properties

/** toolgate's name for the executor of an imported tool, shown as its executor URL. */
function mcpToolUrl (server: string, remoteName: string): string {
  return `mcp://${server}/${encodeURIComponent(remoteName)}`
}

/** Whether the server's own tool name passes `include` and `exclude`. */
function selected (settings: ImportSettings, remoteName: string): boolean {
  return (settings.include === null || settings.include.includes(remoteName)) && !settings.exclude.includes(remoteName)
}

/**
 * The tool definitions a server's tools/list gives (SPEC section 12): the
 * selected tools under `prefix + name`, with the server's description and
 * input schema, annotations believed only from a trusted server, and the
 * host's overrides on top. Problems (a name that cannot be a tool's) are
 * listed, and those tools left out.
 */
export function planImport (settings: ImportSettings, listed: readonly unknown[]): { definitions: ImportedDefinition[], problems: string[] } {
  const plan = new ImportPlan(settings)
  for (const entry of listed) plan.add(entry)
  return plan.result()
}

/**
 * planImport one entry at a time, so that a long list can be planned in
 * slices between which other work runs (SPEC §19).
 */
export class ImportPlan {
  readonly #settings: ImportSettings
  readonly #definitions: ImportedDefinition[] = []
  readonly #problems: string[] = []
  readonly #seen = new Set<string>()
  readonly #maxTools: number
  #over = 0

  constructor (settings: ImportSettings) {
    this.#settings = settings
    this.#maxTools = settings.maxTools ?? DEFAULT_MAX_TOOLS
  }

  /** Plans one entry of the server's list. */
  add (entry: unknown): void {
    const settings = this.#settings
    const tool = readListedTool(entry)
    if (typeof tool === 'string') {
      this.#problems.push(tool)
      return
    }
    if (!selected(settings, tool.name)) return
    if (this.#seen.has(tool.name)) {
      this.#problems.push(`${quotedName(tool.name)}: listed twice by the server`)
      return
    }
    this.#seen.add(tool.name)
    if (this.#definitions.length >= this.#maxTools) {
      this.#over++
      return
    }
    const name = settings.prefix + tool.name
    if (!NAME.test(name)) {
      this.#problems.push(`${quotedName(tool.name)}: ${JSON.stringify(quotedName(name))} is not a valid tool name`)
      return
    }
    const trusted = settings.trust === 'trusted'
    const definition: Record<string, unknown> = {
      name,
      description: (tool.description ?? '').slice(0, MAX_DESCRIPTION),
      inputSchema: withoutForeignDialect(tool.inputSchema),
      executor: { url: mcpToolUrl(settings.name, tool.name), timeoutMs: settings.timeoutMs, ...(settings.maxTimeoutMs === undefined ? {} : { maxTimeoutMs: settings.maxTimeoutMs }) },
      readOnly: trusted && tool.annotations?.readOnlyHint === true
    }
    if (HAS_IDEMPOTENT && trusted && tool.annotations?.idempotentHint === true) definition.idempotent = true
    applyOverride(definition, settings.overrides[tool.name])
    this.#definitions.push({ remoteName: tool.name, definition, listed: tool })
  }

  /** The definitions to register and the problems of the entries planned. */
  result (): { definitions: ImportedDefinition[], problems: string[] } {
    const problems = [...this.#problems]
    if (this.#over > 0) problems.push(`${this.#over} more tools over the limit of ${this.#maxTools} a server may offer (TOOLGATE_MCP_MAX_TOOLS)`)
    return { definitions: this.#definitions, problems }
  }
}

/**
 * Stand-ins for the tools a server that was never reached is known to have
 * (those `include` or an override names): calls to them are answered
 * `executor_unavailable` rather than `unknown_tool` until the server is
 * reached and its own definitions replace them.
 */
export function planPlaceholders (settings: ImportSettings): ImportedDefinition[] {
  const names = new Set([...(settings.include ?? []), ...Object.keys(settings.overrides)])
  const listed: ListedTool[] = []
  for (const name of names) {
    listed.push({ name, description: `Unavailable until MCP server ${settings.name} is reached.`, inputSchema: { type: 'object' } })
  }
  return planImport(settings, listed).definitions
}

/** Overrides win over what the server said; an action tool is a write unless the override says otherwise. */
function applyOverride (definition: Record<string, unknown>, override: McpToolOverride | undefined): void {
  if (override === undefined) return
  if (override.action !== undefined && override.readOnly === undefined) definition.readOnly = false
  for (const [key, value] of Object.entries(override)) definition[key] = value
}

/**
 * A schema as toolgate's draft 2020-12 validator takes it: servers often
 * declare draft-07 in `$schema`, whose keywords they use the same way; the
 * declaration itself would make the compile fail.
 */
export function withoutForeignDialect (schema: Record<string, unknown>): Record<string, unknown> {
  if (typeof schema.$schema !== 'string' || schema.$schema.includes('2020-12')) return schema
  const { $schema: _dialect, ...rest } = schema
  return rest
}
