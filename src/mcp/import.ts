import { ToolDefinition as ToolDefinitionSchema } from '../../schemas/tool.js'
import type { McpToolOverride } from '../../schemas/mcp-server.js'

/** A tool as a server's tools/list describes it (the fields toolgate reads). */
export interface ListedTool {
  name: string
  description?: string | undefined
  inputSchema: Record<string, unknown>
  annotations?: { readOnlyHint?: boolean | undefined, idempotentHint?: boolean | undefined } | undefined
}

/** What importing needs to know of a server: its definition with every default filled in. */
export interface ImportSettings {
  name: string
  trust: 'trusted' | 'untrusted'
  prefix: string
  include: readonly string[] | null
  exclude: readonly string[]
  timeoutMs: number
  overrides: Readonly<Record<string, McpToolOverride>>
}

/** One tool to register: its definition, and its name on the server. */
export interface ImportedDefinition { remoteName: string, definition: Record<string, unknown> }

const NAME = /^[A-Za-z0-9_.-]{1,64}$/
const MAX_DESCRIPTION = 8192
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
export function planImport (settings: ImportSettings, listed: readonly ListedTool[]): { definitions: ImportedDefinition[], problems: string[] } {
  const definitions: ImportedDefinition[] = []
  const problems: string[] = []
  const seen = new Set<string>()
  for (const tool of listed) {
    if (!selected(settings, tool.name)) continue
    if (seen.has(tool.name)) {
      problems.push(`${tool.name}: listed twice by the server`)
      continue
    }
    seen.add(tool.name)
    const name = settings.prefix + tool.name
    if (!NAME.test(name)) {
      problems.push(`${tool.name}: ${JSON.stringify(name)} is not a valid tool name`)
      continue
    }
    const trusted = settings.trust === 'trusted'
    const definition: Record<string, unknown> = {
      name,
      description: (tool.description ?? '').slice(0, MAX_DESCRIPTION),
      inputSchema: withoutForeignDialect(tool.inputSchema),
      executor: { url: mcpToolUrl(settings.name, tool.name), timeoutMs: settings.timeoutMs },
      readOnly: trusted && tool.annotations?.readOnlyHint === true
    }
    if (HAS_IDEMPOTENT && trusted && tool.annotations?.idempotentHint === true) definition.idempotent = true
    applyOverride(definition, settings.overrides[tool.name])
    definitions.push({ remoteName: tool.name, definition })
  }
  return { definitions, problems }
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
function withoutForeignDialect (schema: Record<string, unknown>): Record<string, unknown> {
  if (typeof schema.$schema !== 'string' || schema.$schema.includes('2020-12')) return schema
  const { $schema: _dialect, ...rest } = schema
  return rest
}
