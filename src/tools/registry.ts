import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ToolDefinition as ToolDefinitionSchema } from '../../schemas/tool.js'
import { compileConflictKey } from '../prepare/conflict-key.js'
import { parsePointer } from '../model/json-pointer.js'
import { compileProjection } from '../receipts/projection.js'
import type { ProjectionPool } from '../receipts/projection-pool.js'
import { compileIgnoredArguments } from '../repeat/loops.js'
import { unsupportedPatterns } from '../model/linear-regexp.js'
import { DEFAULT_MAX_VALIDATION_MS, boundedValidator } from './bounded-validate.js'
import { DEFAULT_MAX_SCHEMA_BYTES, SCHEMA_LIMITS, type SchemaLimits, schemaCost } from './schema-cost.js'
import { type SchemaCompiler, compileAlone, createSchemaCompiler } from './schema-compiler.js'
import { ValidationThread } from './validation-thread.js'
import { modelToolNames } from './model-names.js'
import { problemAt, schemaProblems } from './schema-problems.js'
import type { Executor } from '../dispatch/executor.js'
import type { Tool, ToolDefinition, ToolLookup } from '../model/tool.js'

export const DEFAULT_EXECUTOR_TIMEOUT_MS = 30_000
export const DEFAULT_MAX_MODEL_RECEIPT_CHARS = 4096
export const DEFAULT_CONFLICT_WAIT_MS = 30_000

/** Schema keywords that fill arguments in (Ajv `useDefaults`) or may lead to a schema that does. */
const FILLING_KEYWORDS: ReadonlySet<string> = new Set(['default', '$ref', '$dynamicRef', '$recursiveRef'])

/**
 * Whether preparation may change a tool's argument objects in place (Tool's
 * `preparesInPlace`): it has host rewrites, or its schema holds one of
 * FILLING_KEYWORDS as a key anywhere. A property that happens to be named
 * `default` answers true as well: at worst the engine serializes arguments
 * it could have reused, never reuses ones that changed.
 */
export function preparesInPlace (inputSchema: unknown, hasRewrites: boolean): boolean {
  return hasRewrites || holdsKey(inputSchema, FILLING_KEYWORDS)
}

function holdsKey (value: unknown, keys: ReadonlySet<string>): boolean {
  if (value === null || typeof value !== 'object') return false
  if (Array.isArray(value)) return value.some((item) => holdsKey(item, keys))
  for (const [key, member] of Object.entries(value)) {
    if (keys.has(key) || holdsKey(member, keys)) return true
  }
  return false
}

/** A definition that cannot be registered; `problems` names each thing wrong. */
export class InvalidToolError extends Error {
  readonly problems: string[]
  constructor (problems: string[]) {
    super(problems.join('; '))
    this.name = 'InvalidToolError'
    this.problems = problems
  }
}

const checkDefinition = TypeCompiler.Compile(ToolDefinitionSchema)

export interface RegistryOptions {
  /** Origins executor URLs must belong to; null for any http(s) origin. */
  allowedOrigins: readonly string[] | null
  /** Largest `inputSchema` as JSON (TOOLGATE_MAX_SCHEMA_BYTES). @default 262144 */
  maxSchemaBytes?: number
  /** Longest validation of one call's arguments (TOOLGATE_MAX_VALIDATION_MS). @default 50 */
  maxValidationMs?: number
  /** Where the tools' projections are evaluated. @default the process's own pool */
  projections?: ProjectionPool
}

/**
 * The tools a process knows, by name and alias. Definitions are compiled once
 * here (schema, conflict key, projection) so the batch path only looks up.
 */
export class ToolRegistry implements ToolLookup {
  readonly #tools = new Map<string, Tool>()
  readonly #byAlias = new Map<string, Tool>()
  /** Offered names of the tools whose own names the model APIs refuse, both ways; built when first read after a change. */
  #modelNames: { byName: Map<string, string>, tools: Map<string, Tool> } | null = null
  /** Imported tools by name: the MCP server each came from. */
  readonly #owners = new Map<string, string>()
  /** Quarantined MCP tool names, by owner (SPEC §18). */
  readonly #quarantined = new Map<string, ReadonlySet<string>>()
  /** How an owner reads its pins again before a call to one of its quarantined tools is rejected. */
  readonly #rechecks = new Map<string, () => Promise<void>>()
  readonly #opts: RegistryOptions
  /** Told once per tick in which tools changed (MCP sessions send `list_changed`). */
  readonly #listeners = new Set<() => void>()
  #changeQueued = false
  /**
   * One Ajv for every schema of this registry: building one (with formats)
   * costs far more than a compile. Schema patterns match in linear time: a
   * tool's schema may come from an MCP server toolgate does not trust, and
   * each is compiled alone (#compileAlone): what it names with `$id` is
   * forgotten after it, so no schema can see or displace another's, nor the
   * meta-schemas.
   */
  readonly #ajv: SchemaCompiler
  /** What a schema may cost (SPEC section 19): checked before Ajv compiles it. */
  readonly #limits: SchemaLimits
  readonly #maxValidationMs: number
  /** Where validations that could hold the event loop run (bounded-validate.ts), started with the first of them. */
  readonly #thread: ValidationThread

  /** `shared` is what a staging registry uses of the one it checks a whole set for (putAll). */
  constructor (opts: RegistryOptions, shared?: { ajv: SchemaCompiler, thread: ValidationThread }) {
    this.#opts = opts
    this.#limits = { ...SCHEMA_LIMITS, maxBytes: opts.maxSchemaBytes ?? DEFAULT_MAX_SCHEMA_BYTES }
    this.#maxValidationMs = opts.maxValidationMs ?? DEFAULT_MAX_VALIDATION_MS
    this.#ajv = shared?.ajv ?? createSchemaCompiler()
    this.#thread = shared?.thread ?? new ValidationThread()
  }

  /** Ends the validation thread, if one started. */
  async close (): Promise<void> {
    await this.#thread.close()
  }

  /**
   * Compiles the JSON Schema meta-schema the first compile checks every
   * schema against (20-60 ms, once per registry), so that it is paid before
   * the service listens and not inside the first tool registration or MCP
   * import.
   */
  prepare (): void {
    if (this.#ajv.validateSchema({}) !== true) throw new Error('the JSON Schema meta-schema did not accept an empty schema')
  }

  /**
   * Compiles a definition, or throws InvalidToolError listing every problem.
   * `via` is the executor of an imported tool, whose executor URL is
   * toolgate's own name for it rather than an HTTP endpoint.
   */
  compile (input: unknown, via?: Executor): Tool {
    if (!checkDefinition.Check(input)) {
      // With the executor URLs' own problems: an invalid file is reported with every problem listed.
      const problems = schemaProblems(checkDefinition, input)
      const executor = (input as { executor?: { url?: unknown, statusUrl?: unknown } } | null)?.executor
      if (via === undefined && typeof executor?.url === 'string' && !problemAt(problems, '/executor/url')) this.#checkUrl(executor.url, '/executor/url', problems)
      if (typeof executor?.statusUrl === 'string' && !problemAt(problems, '/executor/statusUrl')) this.#checkUrl(executor.statusUrl, '/executor/statusUrl', problems)
      throw new InvalidToolError(problems)
    }
    const def = input as ToolDefinition
    const problems: string[] = []

    if (via === undefined) this.#checkUrl(def.executor.url, '/executor/url', problems)
    if (def.executor.statusUrl !== undefined) {
      this.#checkUrl(def.executor.statusUrl, '/executor/statusUrl', problems)
      if (def.readOnly === true) problems.push('/executor/statusUrl: only writes become uncertain; a readOnly tool has no use for one')
    }

    let validate: Tool['validate'] | undefined
    // The cost model first: a schema over it is never handed to Ajv.
    const cost = schemaCost(def.inputSchema, this.#limits)
    // Each pattern is compiled once here and found again by Ajv's compile (linear-regexp.ts keeps them).
    const patternProblems = cost.problems.length > 0 ? cost.problems : unsupportedPatterns(def.inputSchema)
    if (patternProblems.length > 0) {
      problems.push(...patternProblems)
    } else {
      try {
        const compiled = compileAlone(this.#ajv, def.inputSchema)
        validate = boundedValidator(compiled, { schema: def.inputSchema, weight: cost.weight, maxMs: this.#maxValidationMs, runner: this.#thread, fills: preparesInPlace(def.inputSchema, false) })
      } catch (err) {
        problems.push(`/inputSchema: ${(err as Error).message}`)
      }
    }

    let conflictKey: Tool['conflictKey'] = null
    if (def.conflictKey !== undefined) {
      try { conflictKey = compileConflictKey(def.conflictKey) } catch (err) { problems.push(`/conflictKey: ${(err as Error).message}`) }
    }

    if (def.conflictScope === 'tenant' && def.conflictKey === undefined) problems.push('/conflictScope: tenant scope needs a conflictKey')

    for (const [i, rule] of (def.rewrite ?? []).entries()) {
      try { parsePointer(rule.path) } catch (err) { problems.push(`/rewrite/${i}/path: ${(err as Error).message}`) }
      if (rule.path === '') problems.push(`/rewrite/${i}/path: must point inside the arguments`)
      if (rule.op === 'clamp' && rule.min !== undefined && rule.max !== undefined && rule.min > rule.max) {
        problems.push(`/rewrite/${i}: min must not exceed max`)
      }
    }

    let ignoreArguments: Tool['ignoreArguments'] = []
    try { ignoreArguments = compileIgnoredArguments(def.ignoreArguments ?? []) } catch (err) { problems.push(`/ignoreArguments: ${(err as Error).message}`) }

    for (const alias of def.aliases ?? []) {
      if (alias === def.name) problems.push(`/aliases: ${alias} is the tool's own name`)
      const owner = this.#tools.get(alias) ?? this.#byAlias.get(alias)
      if (owner !== undefined && owner.name !== def.name) problems.push(`/aliases: ${alias} already names tool ${owner.name}`)
    }
    const aliasOwner = this.#byAlias.get(def.name)
    if (aliasOwner !== undefined && aliasOwner.name !== def.name) problems.push(`/name: ${def.name} is an alias of tool ${aliasOwner.name}`)

    let action: Tool['action'] = null
    if (def.action !== undefined) {
      if (def.readOnly === true) problems.push('/action: an action tool changes state and cannot be readOnly')
      let projection = null
      if (def.action.projection !== undefined) {
        try { projection = compileProjection(def.action.projection, { pool: this.#opts.projections }) } catch (err) { problems.push(`/action/projection: ${(err as Error).message}`) }
      }
      action = { projection, maxModelReceiptChars: def.action.maxModelReceiptChars ?? DEFAULT_MAX_MODEL_RECEIPT_CHARS }
    }

    if (problems.length > 0 || validate === undefined) throw new InvalidToolError(problems)

    const definition: Tool['definition'] = {
      name: def.name,
      description: def.description ?? '',
      inputSchema: def.inputSchema,
      executor: {
        url: def.executor.url,
        timeoutMs: def.executor.timeoutMs ?? DEFAULT_EXECUTOR_TIMEOUT_MS,
        ...(def.executor.maxTimeoutMs === undefined ? {} : { maxTimeoutMs: def.executor.maxTimeoutMs }),
        ...(def.executor.statusUrl === undefined ? {} : { statusUrl: def.executor.statusUrl })
      },
      readOnly: def.readOnly ?? false,
      idempotent: def.idempotent ?? false,
      execution: def.execution ?? 'auto',
      conflictScope: def.conflictScope ?? 'run',
      conflictWaitMs: def.conflictWaitMs ?? DEFAULT_CONFLICT_WAIT_MS,
      trackExactRepeats: def.trackExactRepeats ?? true,
      aliases: def.aliases ?? [],
      argumentAliases: def.argumentAliases ?? {},
      rewrite: def.rewrite ?? [],
      requiredScopes: def.requiredScopes ?? [],
      requiresApproval: def.requiresApproval ?? false
    }
    if (def.conflictKey !== undefined) definition.conflictKey = def.conflictKey
    if (def.ignoreArguments !== undefined && def.ignoreArguments.length > 0) definition.ignoreArguments = def.ignoreArguments
    if (def.action !== undefined) definition.action = { ...def.action, maxModelReceiptChars: action!.maxModelReceiptChars }

    return Object.freeze({
      name: definition.name,
      description: definition.description,
      inputSchema: definition.inputSchema,
      executor: Object.freeze({
        url: definition.executor.url,
        timeoutMs: definition.executor.timeoutMs ?? DEFAULT_EXECUTOR_TIMEOUT_MS,
        ...(definition.executor.maxTimeoutMs === undefined ? {} : { maxTimeoutMs: definition.executor.maxTimeoutMs }),
        ...(via === undefined ? {} : { via }),
        statusUrl: definition.executor.statusUrl ?? null
      }),
      readOnly: definition.readOnly,
      idempotent: definition.idempotent,
      execution: definition.execution,
      conflictKey,
      conflictScope: definition.conflictScope,
      conflictWaitMs: definition.conflictWaitMs,
      trackExactRepeats: definition.trackExactRepeats,
      ignoreArguments,
      aliases: definition.aliases,
      argumentAliases: definition.argumentAliases,
      rewrite: definition.rewrite,
      requiredScopes: definition.requiredScopes,
      action,
      requiresApproval: definition.requiresApproval,
      validate,
      preparesInPlace: preparesInPlace(definition.inputSchema, definition.rewrite.length > 0),
      definition
    })
  }

  #checkUrl (raw: string, where: string, problems: string[]): void {
    let url: URL | undefined
    try { url = new URL(raw) } catch { problems.push(`${where}: not a valid URL`) }
    if (url === undefined) return
    if (url.protocol !== 'http:' && url.protocol !== 'https:') problems.push(`${where}: must be http or https`)
    else if (url.username !== '' || url.password !== '') problems.push(`${where}: must not carry credentials`)
    else if (this.#opts.allowedOrigins !== null && !this.#opts.allowedOrigins.includes(url.origin)) {
      problems.push(`${where}: origin ${url.origin} is not in TOOLGATE_EXECUTOR_ALLOWED_ORIGINS`)
    }
  }

  /** Registers or replaces a tool; answers whether it was new. An imported tool is its server's to change. */
  put (input: unknown): { tool: Tool, created: boolean } {
    const tool = this.compile(input)
    const owner = this.#owners.get(tool.name)
    if (owner !== undefined) throw new InvalidToolError([`/name: ${tool.name} is imported from MCP server ${owner}; change it with that server's tool overrides`])
    return this.#install(tool)
  }

  /** The MCP server a tool was imported from, if it was. */
  ownerOf (name: string): string | undefined {
    return this.#owners.get(name)
  }

  /**
   * Replaces every tool imported from `owner` with `tools` (compiled by the
   * caller with their executor), in one step. A tool whose name or alias is
   * held by another tool (not one of this owner's) is left out; the answer
   * names the ones installed and why the others were not.
   */
  replaceOwned (owner: string, tools: readonly Tool[]): { installed: string[], clashes: string[] } {
    for (const [name, o] of this.#owners) {
      if (o === owner) {
        this.#owners.delete(name)
        this.delete(name)
      }
    }
    const installed: string[] = []
    const clashes: string[] = []
    for (const tool of tools) {
      const holder = this.#tools.get(tool.name) ?? this.#byAlias.get(tool.name) ??
        tool.aliases.map((a) => this.#tools.get(a) ?? this.#byAlias.get(a)).find((t) => t !== undefined)
      if (holder !== undefined) {
        const from = this.#owners.get(holder.name)
        clashes.push(`${tool.name} clashes with tool ${holder.name}${from === undefined ? '' : ` of MCP server ${from}`}`)
        continue
      }
      this.#install(tool)
      this.#owners.set(tool.name, owner)
      installed.push(tool.name)
    }
    return { installed, clashes }
  }

  /** Calls `listener` after the tools change (once for the changes of one tick); answers how to stop. */
  onChange (listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => { this.#listeners.delete(listener) }
  }

  #changed (): void {
    if (this.#listeners.size === 0 || this.#changeQueued) return
    this.#changeQueued = true
    queueMicrotask(() => {
      this.#changeQueued = false
      for (const listener of this.#listeners) listener()
    })
  }

  #install (tool: Tool): { tool: Tool, created: boolean } {
    this.#modelNames = null
    this.#changed()
    const previous = this.#tools.get(tool.name)
    if (previous !== undefined) for (const alias of previous.aliases) this.#byAlias.delete(alias)
    this.#tools.set(tool.name, tool)
    for (const alias of tool.aliases) this.#byAlias.set(alias, tool)
    return { tool, created: previous === undefined }
  }

  /**
   * Registers a whole set at once (the tools file): every definition is
   * checked first, and nothing is registered unless all of them are valid.
   */
  putAll (inputs: readonly unknown[]): void {
    const problems: string[] = []
    const staging = new ToolRegistry(this.#opts, { ajv: this.#ajv, thread: this.#thread })
    const names = new Set<string>()
    for (const [i, input] of inputs.entries()) {
      const name = (input as { name?: unknown })?.name
      const label = typeof name === 'string' ? `tools[${i}] (${name})` : `tools[${i}]`
      if (typeof name === 'string' && names.has(name)) problems.push(`${label}: duplicate name`)
      try {
        staging.put(input)
        if (typeof name === 'string') names.add(name)
      } catch (err) {
        if (err instanceof InvalidToolError) for (const p of err.problems) problems.push(`${label} ${p}`)
        else throw err
      }
    }
    if (problems.length > 0) throw new InvalidToolError(problems)
    for (const tool of staging.list()) this.#install(tool)
  }

  delete (name: string): boolean {
    const tool = this.#tools.get(name)
    if (tool === undefined) return false
    this.#modelNames = null
    this.#changed()
    this.#owners.delete(name)
    this.#tools.delete(name)
    for (const alias of tool.aliases) this.#byAlias.delete(alias)
    return true
  }

  get (name: string): Tool | undefined {
    return this.#tools.get(name)
  }

  /**
   * Sets an owner's quarantined tool names, in place of its earlier ones:
   * they are not offered, and calls to them are rejected `tool_quarantined`
   * once `recheck` (the owner reading its pins again) has settled.
   */
  setQuarantined (owner: string, names: readonly string[], recheck?: () => Promise<void>): void {
    this.#changed()
    this.#rechecks.delete(owner)
    if (names.length === 0) {
      this.#quarantined.delete(owner)
      return
    }
    this.#quarantined.set(owner, new Set(names))
    if (recheck !== undefined) this.#rechecks.set(owner, recheck)
  }

  quarantined (name: string): boolean {
    for (const names of this.#quarantined.values()) if (names.has(name)) return true
    return false
  }

  async stillQuarantined (name: string): Promise<boolean> {
    for (const [owner, names] of this.#quarantined) {
      if (names.has(name)) {
        await this.#rechecks.get(owner)?.()
        break
      }
    }
    return this.quarantined(name)
  }

  resolve (nameOrAlias: string): Tool | undefined {
    return this.#tools.get(nameOrAlias) ?? this.#byAlias.get(nameOrAlias) ?? this.#mapped().tools.get(nameOrAlias)
  }

  /** The name a tool is offered under in provider formats: its own, or a mapped one when the model APIs refuse its own (`model-names.ts`). */
  modelName (name: string): string {
    return this.#mapped().byName.get(name) ?? name
  }

  #mapped (): { byName: Map<string, string>, tools: Map<string, Tool> } {
    if (this.#modelNames === null) {
      const byName = modelToolNames(this.#tools.keys(), new Set([...this.#tools.keys(), ...this.#byAlias.keys()]))
      const tools = new Map<string, Tool>()
      for (const [name, offered] of byName) tools.set(offered, this.#tools.get(name)!)
      this.#modelNames = { byName, tools }
    }
    return this.#modelNames
  }

  list (): Tool[] {
    return [...this.#tools.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  get size (): number {
    return this.#tools.size
  }
}
