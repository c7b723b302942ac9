// Builds real Tool objects for tests, the way the registry will: Ajv 2020
// with defaults filled in, the conflict key compiled once.
import Ajv2020Module from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { compileConflictKey } from '../../src/prepare/conflict-key.js'
import type { AuthorizationContext } from '../../src/prepare/types.js'
import { preparesInPlace } from '../../src/tools/registry.js'
import { unboundedValidator } from '../../src/tools/bounded-validate.js'
import type { Tool, ToolDefinition, ToolLookup } from '../../src/model/tool.js'

// Both are CommonJS: under NodeNext the default import is module.exports, whose `default` is the export
const Ajv2020 = Ajv2020Module.default
const addFormats = addFormatsModule.default

const ajv = new Ajv2020({ useDefaults: true, allErrors: false, strict: false })
addFormats(ajv)

export function makeTool (def: Partial<ToolDefinition> & { name: string }): Tool {
  const definition = {
    description: '',
    inputSchema: { type: 'object' },
    executor: { url: 'http://127.0.0.1:9/tools/' + def.name },
    readOnly: false,
    idempotent: false,
    execution: 'auto' as const,
    conflictScope: 'run' as const,
    conflictWaitMs: 30000,
    trackExactRepeats: true,
    aliases: [],
    argumentAliases: {},
    rewrite: [],
    requiredScopes: [],
    requiresApproval: false,
    ...def
  }
  return {
    name: definition.name,
    description: definition.description,
    inputSchema: definition.inputSchema,
    executor: { url: definition.executor.url, timeoutMs: definition.executor.timeoutMs ?? 30000, statusUrl: definition.executor.statusUrl ?? null },
    readOnly: definition.readOnly,
    idempotent: definition.idempotent,
    execution: definition.execution,
    conflictKey: definition.conflictKey === undefined ? null : compileConflictKey(definition.conflictKey),
    conflictScope: definition.conflictScope,
    conflictWaitMs: definition.conflictWaitMs,
    trackExactRepeats: definition.trackExactRepeats,
    aliases: definition.aliases,
    argumentAliases: definition.argumentAliases,
    rewrite: definition.rewrite,
    requiredScopes: definition.requiredScopes,
    action: null,
    requiresApproval: definition.requiresApproval ?? false,
    validate: unboundedValidator(ajv.compile(definition.inputSchema)),
    preparesInPlace: preparesInPlace(definition.inputSchema, definition.rewrite.length > 0),
    definition: { ...definition, executor: { ...definition.executor, timeoutMs: definition.executor.timeoutMs ?? 30000 } }
  }
}

export function makeLookup (tools: readonly Tool[]): ToolLookup {
  const byName = new Map<string, Tool>()
  for (const tool of tools) {
    byName.set(tool.name, tool)
    for (const alias of tool.aliases) byName.set(alias, tool)
  }
  return { resolve: (name) => byName.get(name) }
}

export function makeContext (overrides: Partial<AuthorizationContext> = {}): AuthorizationContext {
  return { runId: 'r1', tenant: 'acme', allowedTools: null, scopes: new Set(['*']), ...overrides }
}
