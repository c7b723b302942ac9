import type { Tool } from '../model/tool.js'

/**
 * The tools a run may offer its model (SPEC section 3): those its `tools`
 * allow-list and the caller's scopes permit, so the model is never offered a
 * tool it would be refused. `*` in the scopes permits every tool; a
 * quarantined tool (SPEC section 18) is never offered.
 */
export function offeredTools (all: readonly Tool[], allowList: readonly string[] | null, scopes: ReadonlySet<string>, quarantined: (name: string) => boolean = () => false): Tool[] {
  const allowed = allowList === null ? null : new Set(allowList)
  const every = scopes.has('*')
  return all.filter((t) => (allowed === null || allowed.has(t.name)) && (every || t.requiredScopes.every((s) => scopes.has(s))) && !quarantined(t.name))
}
