import t from 'tap'
import type { ExternalAuthorizer } from '../../src/prepare/authorize.js'
import { prepareBatch, prepareCall } from '../../src/prepare/pipeline.js'
import { canonicalJson } from '../../src/model/json.js'
import type { PreparationOutcome, RawCall } from '../../src/model/call.js'
import type { StageResult } from '../../src/prepare/types.js'
import { makeContext, makeLookup, makeTool } from './tool-fixture.js'

const build = makeTool({
  name: 'build',
  aliases: ['construct'],
  inputSchema: {
    type: 'object',
    properties: {
      kind: { type: 'string' },
      x: { type: 'integer' },
      y: { type: 'integer' },
      style: { type: 'object', properties: { color: { type: 'string', default: 'grey' } }, default: {} }
    },
    required: ['kind', 'x', 'y'],
    additionalProperties: false
  },
  conflictKey: 'tile:{/x}:{/y}',
  argumentAliases: { type: 'kind' },
  rewrite: [{ op: 'clamp', path: '/x', min: 0, max: 255 }],
  requiredScopes: ['world:write']
})
const look = makeTool({
  name: 'look',
  readOnly: true,
  inputSchema: { type: 'object', properties: { x: { type: 'integer', default: 0 } }, additionalProperties: false }
})
const tag = makeTool({
  name: 'tag',
  inputSchema: { type: 'object', properties: { label: { type: 'string', maxLength: 3 } } },
  rewrite: [{ op: 'set', path: '/label', value: 'too long' }]
})
const blocked = makeTool({ name: 'blocked', rewrite: [{ op: 'set', path: '/a/b', value: 1 }] })
const keyed = makeTool({ name: 'keyed', conflictKey: 'k:{/missing}' })
const lookup = makeLookup([build, look, tag, blocked, keyed])
const ctx = makeContext({ scopes: new Set(['world:write']) })

function summary (outcomes: PreparationOutcome[]): unknown[] {
  return outcomes.map((o) => o.ok
    ? { index: o.index, id: o.id, ok: true, arguments: o.arguments, conflictKey: o.conflictKey }
    : { index: o.index, id: o.id, ok: false, reason: o.reason, arguments: o.arguments })
}

t.test('every stage runs on each call and the outcomes keep source order', async (t) => {
  const calls: RawCall[] = [
    { id: 'c0', name: 'look', arguments: '' },
    { id: 'c1', name: 'demolish', arguments: '{"x": 1}' },
    { id: 'c2', name: 'build', arguments: '{"kind": "wall", "x": 1' },
    { id: 'c3', name: 'construct', arguments: '{"type": "wall", "x": "300", "y": 2}' },
    { id: 'c4', name: 'build', arguments: { kind: 'wall', x: 'one', y: 2 } },
    { id: 'c5', name: 'tag', arguments: { label: 'ok' } },
    { id: 'c6', name: 'keyed', arguments: JSON.stringify(JSON.stringify({ other: 1 })) },
    { id: 'c7', name: 'blocked', arguments: { a: 5 } },
    { id: 'c8', name: 'look', arguments: [1, 2] }
  ]
  const outcomes = await prepareBatch(calls, lookup, ctx)
  t.strictSame(summary(outcomes), [
    { index: 0, id: 'c0', ok: true, arguments: { x: 0 }, conflictKey: null },
    { index: 1, id: 'c1', ok: false, reason: 'unknown_tool', arguments: '{"x": 1}' },
    { index: 2, id: 'c2', ok: false, reason: 'invalid_arguments', arguments: '{"kind": "wall", "x": 1' },
    { index: 3, id: 'c3', ok: true, arguments: { kind: 'wall', x: 255, y: 2, style: { color: 'grey' } }, conflictKey: 'tile:255:2' },
    { index: 4, id: 'c4', ok: false, reason: 'invalid_arguments', arguments: { kind: 'wall', x: 'one', y: 2 } },
    { index: 5, id: 'c5', ok: false, reason: 'policy_denied', arguments: { label: 'too long' } },
    { index: 6, id: 'c6', ok: false, reason: 'conflict_key_unresolved', arguments: { other: 1 } },
    { index: 7, id: 'c7', ok: false, reason: 'policy_denied', arguments: { a: 5 } },
    { index: 8, id: 'c8', ok: false, reason: 'invalid_arguments', arguments: [1, 2] }
  ])
  const c3 = outcomes[3]
  t.equal(c3?.requestedName, 'construct', 'the requested name is the alias the model used')
  t.equal(c3?.tool, build, 'the tool is the canonical one')
  t.match(outcomes[5], { message: /host policy rewrite produced invalid arguments: \/label must NOT have more than 3 characters/ })
  t.match(outcomes[7], { message: /host policy could not be applied: cannot set \/a\/b/ })
  t.match(outcomes[6], { message: /\/missing/ })
})

t.test('object arguments are never mutated by defaults or rewrites', async (t) => {
  const args = { kind: 'wall', x: 999, y: 1, style: {} }
  const [outcome] = await prepareBatch([{ id: 'c', name: 'build', arguments: args }], lookup, ctx)
  t.match(outcome, { ok: true, arguments: { kind: 'wall', x: 255, y: 1, style: { color: 'grey' } } })
  t.strictSame(args, { kind: 'wall', x: 999, y: 1, style: {} })
})

t.test('two calls with the same string get independent argument objects', async (t) => {
  const raw = '{"kind": "wall", "x": 1, "y": 1}'
  const [a, b] = await prepareBatch([{ id: 'a', name: 'build', arguments: raw }, { id: 'b', name: 'build', arguments: raw }], lookup, ctx)
  t.not(a?.arguments, b?.arguments)
  t.not((a?.arguments as { style: unknown }).style, (b?.arguments as { style: unknown }).style)
})

t.test('local authorization refuses by allow-list and scopes', async (t) => {
  const cases: Array<[string, Parameters<typeof makeContext>[0], string | null]> = [
    ['allowed by name and scope', { allowedTools: new Set(['build']), scopes: new Set(['world:write']) }, null],
    ['off the allow-list', { allowedTools: new Set(['look']), scopes: new Set(['*']) }, 'tool_not_allowed'],
    ['missing a scope', { allowedTools: null, scopes: new Set(['world:read']) }, 'unauthorized']
  ]
  for (const [name, overrides, reason] of cases) {
    const [outcome] = await prepareBatch([{ id: 'c', name: 'construct', arguments: { kind: 'w', x: 1, y: 1 } }], lookup, makeContext(overrides))
    if (reason === null) t.equal(outcome?.ok, true, name)
    else t.match(outcome, { ok: false, reason, arguments: { kind: 'w', x: 1, y: 1, style: { color: 'grey' } } }, name)
  }
})

t.test('the external authorizer decides after local authorization, and fails closed', async (t) => {
  const allow: StageResult<void> = { ok: true, value: undefined }
  const cases: Array<{ name: string, authorizer: ExternalAuthorizer, reason: string | null, message?: RegExp }> = [
    { name: 'allowing', authorizer: async () => allow, reason: null },
    { name: 'denying', authorizer: async () => ({ ok: false, reason: 'policy_denied', message: 'not on weekends' }), reason: 'policy_denied', message: /^not on weekends$/ },
    { name: 'denying without a usable reason', authorizer: async () => ({ ok: false, reason: 'nope', message: '' }) as unknown as StageResult<void>, reason: 'unauthorized', message: /denied/ },
    { name: 'rejecting', authorizer: async () => { throw new Error('ECONNREFUSED at secret-host') }, reason: 'unauthorized', message: /could not decide/ },
    { name: 'throwing synchronously', authorizer: () => { throw new Error('boom') }, reason: 'unauthorized', message: /could not decide/ },
    { name: 'answering nonsense', authorizer: async () => undefined as unknown as StageResult<void>, reason: 'unauthorized' }
  ]
  for (const c of cases) {
    const outcomes = await prepareBatch([
      { id: 'c0', name: 'build', arguments: '{"kind": "wall", "x": 1, "y": 2}' },
      { id: 'c1', name: 'nope', arguments: '{}' }
    ], lookup, ctx, c.authorizer)
    t.equal(outcomes.length, 2, c.name)
    t.match(outcomes[1], { ok: false, index: 1, reason: 'unknown_tool' }, `${c.name}: a local rejection stays`)
    if (c.reason === null) {
      t.match(outcomes[0], { ok: true, index: 0, conflictKey: 'tile:1:2' }, c.name)
      continue
    }
    t.match(outcomes[0], { ok: false, index: 0, reason: c.reason, arguments: { kind: 'wall', x: 1, y: 2 } }, c.name)
    if (c.message) t.match(outcomes[0], { message: c.message }, c.name)
    t.notMatch(outcomes[0], { message: /secret-host/ }, `${c.name}: no error detail leaks`)
  }
})

t.test('the external authorizer sees prepared calls only, all at once', async (t) => {
  const seen: unknown[] = []
  const pending: Array<() => void> = []
  const authorizer: ExternalAuthorizer = async (input) => {
    seen.push(input)
    await new Promise<void>((resolve) => pending.push(resolve))
    return input.callId === 'c2' ? { ok: false, reason: 'unauthorized', message: 'no' } : { ok: true, value: undefined }
  }
  const batch = prepareBatch([
    { id: 'c0', name: 'look', arguments: '{}' },
    { id: 'c1', name: 'look', arguments: '{"x": "nope"}' },
    { id: 'c2', name: 'construct', arguments: { type: 'door', x: 1, y: 1 } },
    { id: 'c3', name: 'keyed', arguments: {} }
  ], lookup, ctx, authorizer)
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(pending.length, 3, 'every authorization is in flight before any is answered')
  t.strictSame(seen[1], { runId: 'r1', tenant: 'acme', tool: 'build', callId: 'c2', arguments: { kind: 'door', x: 1, y: 1, style: { color: 'grey' } } })
  for (const resolve of pending.reverse()) resolve()
  const outcomes = await batch
  t.strictSame(outcomes.map((o) => [o.index, o.ok, o.ok ? null : o.reason]), [
    [0, true, null],
    [1, false, 'invalid_arguments'],
    [2, false, 'unauthorized'],
    [3, false, 'conflict_key_unresolved']
  ], 'the conflict key is resolved after the external authorizer, in source order')
})

t.test('prepareCall prepares one call without an external authorizer', async (t) => {
  const outcome = await prepareCall({ id: 'x', name: 'build', arguments: '{"kind": "wall", "x": -4, "y": "7"}' }, 5, lookup, ctx)
  t.match(outcome, { ok: true, index: 5, id: 'x', conflictKey: 'tile:0:7', arguments: { kind: 'wall', x: 0, y: 7 } })
})

t.test('an empty batch prepares to nothing', async (t) => {
  t.strictSame(await prepareBatch([], lookup, ctx), [])
  t.strictSame(await prepareBatch([], lookup, ctx, async () => ({ ok: true, value: undefined })), [])
})

t.test('arguments larger than maxArgumentBytes are rejected as invalid_arguments, as a string or as an object', async (t) => {
  const big = 'x'.repeat(300)
  const lookup = makeLookup([makeTool({ name: 'echo', inputSchema: { type: 'object' }, executor: { url: 'http://127.0.0.1:1/echo' } })])
  const ctx = { ...makeContext(), maxArgumentBytes: 256 }
  const [asString, asObject, small] = await prepareBatch([
    { id: 'a', name: 'echo', arguments: JSON.stringify({ big }) },
    { id: 'b', name: 'echo', arguments: { big } },
    { id: 'c', name: 'echo', arguments: { big: 'x' } }
  ], lookup, ctx)
  t.match(asString, { ok: false, reason: 'invalid_arguments' })
  t.match(asObject, { ok: false, reason: 'invalid_arguments' })
  t.match(small, { ok: true })
})

t.test('the size limit measures the argument texts the context gives, by position, at the boundary exactly', async (t) => {
  const lookup = makeLookup([makeTool({ name: 'echo', inputSchema: { type: 'object' }, executor: { url: 'http://127.0.0.1:1/echo' } })])
  // {"b":"é…","a":1}: 2 bytes per é; in canonical order the text is as long.
  const at = (n: number): RawCall => ({ id: `c${n}`, name: 'echo', arguments: { b: 'é'.repeat(n), a: 1 } })
  const limit = Buffer.byteLength(JSON.stringify(at(100).arguments))
  const calls = [at(100), at(101)]
  const argumentTexts = calls.map((c) => ({ text: canonicalJson(c.arguments) }))
  const ctx = { ...makeContext(), maxArgumentBytes: limit }
  const [fits, over] = await prepareBatch(calls, lookup, { ...ctx, argumentTexts })
  t.match(fits, { ok: true }, 'exactly at the limit passes')
  t.match(over, { ok: false, reason: 'invalid_arguments' }, 'one character more is refused')
  t.strictSame(await prepareBatch(calls, lookup, ctx), [fits, over], 'the same as measuring the objects themselves')
})

t.test("an argument object is cloned unless the context owns it, and the result is the same either way", async (t) => {
  const call = (): RawCall => ({ id: 'a', name: 'build', arguments: { kind: 'wall', x: 300, y: 2 } })
  const kept = call()
  const shared = await prepareCall(kept, 0, lookup, ctx)
  t.strictSame(kept.arguments, { kind: 'wall', x: 300, y: 2 }, "the caller's object is left alone")
  const given = call()
  const owned = await prepareCall(given, 0, lookup, { ...ctx, argumentsOwned: true })
  t.strictSame(owned, shared, 'the same outcome')
  t.ok(owned.ok && owned.arguments === given.arguments, 'an owned object is prepared in place, not copied')
})

t.test('each validation of a call, the rewrite\'s second included, names the call\'s tenant as its owner (its turn on the validation thread)', async (t) => {
  const owners: Array<string | undefined> = []
  const validate = build.validate
  const watched: typeof build = { ...build, validate: (data, bytes, owner) => { owners.push(owner); return validate(data, bytes, owner) } }
  const [outcome] = await prepareBatch([{ id: 'c', name: 'build', arguments: { kind: 'wall', x: 300, y: 1 } }], makeLookup([watched]), makeContext({ tenant: 'acme' }))
  t.equal(outcome!.ok, true)
  t.same(owners, ['acme', 'acme'], 'validated, rewritten (clamped), validated again')
})
