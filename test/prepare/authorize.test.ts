import t from 'tap'
import { authorizeLocally } from '../../src/prepare/authorize.js'
import { makeContext, makeTool } from './tool-fixture.js'

t.test('the allow-list and the scopes decide locally', (t) => {
  const build = makeTool({ name: 'build', aliases: ['construct'], requiredScopes: ['world:write', 'world:read'] })
  const look = makeTool({ name: 'look' })
  const cases: Array<{ name: string, tool: typeof build, allowed: string[] | null, scopes: string[], reason?: string, message?: RegExp }> = [
    { name: 'no allow-list and every scope', tool: build, allowed: null, scopes: ['world:write', 'world:read'] },
    { name: 'the wildcard scope', tool: build, allowed: null, scopes: ['*'] },
    { name: 'a tool without required scopes needs none', tool: look, allowed: null, scopes: [] },
    { name: 'a tool on the allow-list', tool: build, allowed: ['build', 'look'], scopes: ['*'] },
    { name: 'a tool off the allow-list', tool: build, allowed: ['look'], scopes: ['*'], reason: 'tool_not_allowed', message: /"build" is not allowed/ },
    { name: 'an alias on the allow-list does not allow the tool', tool: build, allowed: ['construct'], scopes: ['*'], reason: 'tool_not_allowed' },
    { name: 'an empty allow-list', tool: look, allowed: [], scopes: ['*'], reason: 'tool_not_allowed' },
    { name: 'the allow-list is checked before the scopes', tool: build, allowed: ['look'], scopes: [], reason: 'tool_not_allowed' },
    { name: 'one missing scope', tool: build, allowed: null, scopes: ['world:read'], reason: 'unauthorized', message: /scope the tool "build" requires: world:write$/ },
    { name: 'every missing scope is named', tool: build, allowed: null, scopes: ['other'], reason: 'unauthorized', message: /scopes .*: world:write, world:read$/ }
  ]
  for (const c of cases) {
    const ctx = makeContext({ allowedTools: c.allowed === null ? null : new Set(c.allowed), scopes: new Set(c.scopes) })
    const result = authorizeLocally(c.tool, ctx)
    if (c.reason === undefined) {
      t.ok(result.ok, c.name)
      continue
    }
    t.equal(result.ok, false, c.name)
    if (result.ok) continue
    t.equal(result.reason, c.reason, c.name)
    if (c.message) t.match(result.message, c.message, c.name)
  }
  t.end()
})
