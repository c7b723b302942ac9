import t, { type Test } from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readToolsFile } from '../../src/tools/load.js'
import { InvalidToolError, ToolRegistry, preparesInPlace } from '../../src/tools/registry.js'

const URL_BASE = 'http://127.0.0.1:9000/tools'

/** A directory of its own with these files, removed when the test ends. */
function filesDir (t: Test, files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-registry-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  return dir
}

const look = {
  name: 'look',
  description: 'Look at a tile.',
  inputSchema: { type: 'object', properties: { x: { type: 'integer' }, y: { type: 'integer' } }, required: ['x', 'y'] },
  executor: { url: `${URL_BASE}/look` },
  readOnly: true,
  aliases: ['peek']
}
const build = {
  name: 'build',
  inputSchema: { type: 'object', properties: { kind: { type: 'string' }, x: { type: 'integer' }, y: { type: 'integer' } } },
  executor: { url: `${URL_BASE}/build`, timeoutMs: 1000 },
  conflictKey: 'tile:{/x}:{/y}',
  action: { projection: "{ 'status': receipt.status }" }
}

const YAML = `
# The same two tools, as YAML.
tools:
  - name: look
    description: Look at a tile.
    inputSchema:
      type: object
      properties:
        x: { type: integer }
        y: { type: integer }
      required: [x, y]
    executor:
      url: ${URL_BASE}/look
    readOnly: true
    aliases: [peek]
  - name: build
    inputSchema:
      type: object
      properties:
        kind: { type: string }
        x: { type: integer }
        y: { type: integer }
    executor: { url: "${URL_BASE}/build", timeoutMs: 1000 }
    conflictKey: "tile:{/x}:{/y}"
    action:
      projection: "{ 'status': receipt.status }"
`

function problemsOf (fn: () => unknown): string[] {
  try {
    fn()
  } catch (err) {
    if (err instanceof InvalidToolError) return err.problems
    throw err
  }
  return []
}

t.test('a JSON tools file loads and registers every tool with its defaults', async (t) => {
  const dir = filesDir(t, { 'tools.json': JSON.stringify({ tools: [look, build] }) })
  const defs = await readToolsFile(join(dir, 'tools.json'))
  const registry = new ToolRegistry({ allowedOrigins: null })
  registry.putAll(defs)
  t.same(registry.list().map((x) => x.name), ['build', 'look'], 'listed by name')
  const tool = registry.resolve('peek')
  t.equal(tool?.name, 'look', 'an alias resolves to its tool')
  t.equal(registry.get('build')?.executor.timeoutMs, 1000)
  t.equal(registry.get('look')?.executor.timeoutMs, 30000, 'timeoutMs defaults to 30000')
  t.equal(registry.get('build')?.readOnly, false, 'readOnly defaults to false')
  t.equal(registry.get('build')?.execution, 'auto')
  t.equal(registry.get('build')?.trackExactRepeats, true)
  t.equal(registry.get('build')?.action?.maxModelReceiptChars, 4096)
  t.ok((await registry.get('build')?.validate({ kind: 'wall', x: 1, y: 2 }))?.valid, 'the schema is compiled')
  t.notOk((await registry.get('look')?.validate({ x: 1 }))?.valid, 'the compiled schema enforces required')
})

t.test('a YAML tools file loads the same tools as the JSON one', async (t) => {
  const dir = filesDir(t, { 'tools.yaml': YAML, 'tools.yml': YAML, 'tools.json': JSON.stringify({ tools: [look, build] }) })
  const fromJson = new ToolRegistry({ allowedOrigins: null })
  fromJson.putAll(await readToolsFile(join(dir, 'tools.json')))
  for (const file of ['tools.yaml', 'tools.yml']) {
    const registry = new ToolRegistry({ allowedOrigins: null })
    registry.putAll(await readToolsFile(join(dir, file)))
    t.strictSame(registry.list().map((x) => x.definition), fromJson.list().map((x) => x.definition), file)
  }
})

t.test('a file with several bad tools lists every problem of every tool, and registers none', async (t) => {
  const dir = filesDir(t, {
    'tools.json': JSON.stringify({
      tools: [
        look,
        { ...build, name: 'bad name' },
        { ...build, name: 'schema', inputSchema: { type: 12 } },
        { ...build, name: 'ftp', executor: { url: 'ftp://h/x' } },
        { ...build, name: 'key', conflictKey: 'tile:{/x' },
        { ...build, name: 'proj', action: { projection: '{ "a": ' } },
        { ...look, aliases: [] },
        { ...build, name: 'extra', colour: 'blue' },
        { ...build, name: 'many', inputSchema: { type: 12 }, executor: { url: 'ftp://h/x' }, conflictKey: 'k:{x}' }
      ]
    })
  })
  const registry = new ToolRegistry({ allowedOrigins: null })
  const defs = await readToolsFile(join(dir, 'tools.json'))
  const problems = problemsOf(() => registry.putAll(defs))
  const text = problems.join('\n')
  t.match(text, /tools\[1\].*name/, 'the bad name')
  t.match(text, /tools\[2\] \(schema\).*inputSchema/, 'the bad schema')
  t.match(text, /tools\[3\] \(ftp\).*url/, 'the ftp URL')
  t.match(text, /tools\[4\] \(key\).*conflictKey/, 'the bad conflict key')
  t.match(text, /tools\[5\] \(proj\).*projection/, 'the bad projection')
  t.match(text, /tools\[6\] \(look\).*duplicate/, 'the duplicate name')
  t.match(text, /tools\[7\] \(extra\)/, 'the unknown field')
  const many = problems.filter((p) => p.startsWith('tools[8]'))
  t.equal(many.length, 3, 'three problems of one tool are all listed')
  t.equal(registry.size, 0, 'nothing was registered')
})

t.test('an alias clash inside the file is reported', async (t) => {
  const registry = new ToolRegistry({ allowedOrigins: null })
  const problems = problemsOf(() => registry.putAll([look, { ...build, aliases: ['peek'] }]))
  t.match(problems.join('\n'), /tools\[1\] \(build\).*aliases.*peek/)
  t.equal(registry.size, 0)
})

t.test('a tools file that cannot be read says which file and why', async (t) => {
  const dir = filesDir(t, {
    'broken.json': '{"tools": [',
    'broken.yaml': 'tools: [\n  - name: x\n  bad: : :',
    'no-tools.json': '{"tool": []}',
    'not-array.yaml': 'tools: look',
    'null.json': 'null'
  })
  for (const file of ['broken.json', 'broken.yaml', 'no-tools.json', 'not-array.yaml', 'null.json', 'missing.json']) {
    const path = join(dir, file)
    await t.rejects(readToolsFile(path), { message: new RegExp(path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) }, `${file}: the error names the file`)
  }
})

t.test('the registry refuses an executor origin outside TOOLGATE_EXECUTOR_ALLOWED_ORIGINS', async (t) => {
  const registry = new ToolRegistry({ allowedOrigins: ['http://127.0.0.1:9000'] })
  t.doesNotThrow(() => registry.put(look))
  const problems = problemsOf(() => registry.put({ ...build, executor: { url: 'http://evil.example/tools/build' } }))
  t.match(problems.join('\n'), /executor\/url.*evil\.example/)
})

t.test('executor URLs with credentials are refused', async (t) => {
  const registry = new ToolRegistry({ allowedOrigins: null })
  t.match(problemsOf(() => registry.put({ ...look, executor: { url: 'http://user:pw@127.0.0.1:9000/x' } })).join(), /credentials/)
})

t.test('replacing a tool frees its old aliases; deleting frees name and aliases', async (t) => {
  const registry = new ToolRegistry({ allowedOrigins: null })
  t.equal(registry.put(look).created, true)
  t.equal(registry.put({ ...look, aliases: ['glance'] }).created, false)
  t.equal(registry.resolve('peek'), undefined)
  t.equal(registry.resolve('glance')?.name, 'look')
  t.ok(registry.delete('look'))
  t.notOk(registry.delete('look'))
  t.equal(registry.resolve('glance'), undefined)
  t.equal(registry.size, 0)
})

t.test('schemas are compiled with formats (draft 2020-12)', async (t) => {
  const registry = new ToolRegistry({ allowedOrigins: null })
  const { tool } = registry.put({
    name: 'mail',
    inputSchema: {
      type: 'object',
      properties: { to: { type: 'string', format: 'email' }, at: { type: 'string', format: 'date-time' }, pair: { type: 'array', prefixItems: [{ type: 'integer' }, { type: 'string' }], items: false } }
    },
    executor: { url: `${URL_BASE}/mail` }
  })
  t.ok((await tool.validate({ to: 'a@example.com', at: '2024-01-01T00:00:00Z', pair: [1, 'a'] })).valid)
  t.notOk((await tool.validate({ to: 'not-an-email' })).valid, 'email format enforced')
  t.notOk((await tool.validate({ at: 'yesterday' })).valid, 'date-time format enforced')
  t.notOk((await tool.validate({ pair: [1, 'a', 3] })).valid, 'prefixItems with items false (2020-12) enforced')
})

t.test("a schema's $id is its own: it cannot displace a meta-schema, nor be seen by another tool's schema, nor keep its id from the next", async (t) => {
  const registry = new ToolRegistry({ allowedOrigins: null })
  registry.prepare()
  const put = (name: string, inputSchema: Record<string, unknown>): string[] | 'ok' => {
    try {
      registry.put({ name, inputSchema, executor: { url: `${URL_BASE}/${name}` } })
      return 'ok'
    } catch (err) {
      if (err instanceof InvalidToolError) return err.problems
      throw err
    }
  }
  for (const id of ['https://json-schema.org/draft/2020-12/schema', 'https://json-schema.org/draft/2020-12/meta/core', 'https://json-schema.org/draft/2020-12/meta/validation']) {
    t.match(put('hostile', { $id: id, type: 'object' }), [new RegExp(`^/inputSchema: .*${id.replace(/[./]/g, '\\$&')}.* already exists`)], `a schema named ${id} is refused`)
    t.equal(put('after', { type: 'object', properties: { x: { type: 'string' } } }), 'ok', 'and the next tool compiles')
    t.match(put('invalid', { type: 'object', properties: { x: { type: 'nonsense' } } }), [/^\/inputSchema: schema is invalid/], 'with the meta-schema still checking it')
  }

  const inner = 'https://example.test/inner'
  const refersToInner = { type: 'object', properties: { p: { $ref: inner } } }
  t.match(put('reader', refersToInner), [/only references inside the schema/], "another tool's inner $id is not there to refer to")
  t.equal(put('owner', { type: 'object', properties: { p: { $id: inner, type: 'integer' } } }), 'ok')
  t.match(put('reader', refersToInner), [/only references inside the schema/], 'nor after that tool registered it')
  t.equal(put('other', { type: 'object', properties: { q: { $id: inner, type: 'string' } } }), 'ok', 'another schema may name its own part the same')

  const shared = 'https://example.test/shared'
  t.equal(put('first', { $id: shared, type: 'object', properties: { n: { type: 'integer' } } }), 'ok')
  t.equal(put('second', { $id: shared, type: 'object', properties: { n: { type: 'string' } } }), 'ok', 'two tools may carry one $id')
  t.ok((await registry.get('first')!.validate({ n: 1 })).valid)
  t.notOk((await registry.get('first')!.validate({ n: 'a' })).valid, 'each validates with its own schema')
  t.ok((await registry.get('second')!.validate({ n: 'a' })).valid)
  t.notOk((await registry.get('second')!.validate({ n: 1 })).valid)
})

t.test('a tool prepares in place when it has rewrites, or a default or a reference anywhere in its schema', async (t) => {
  const registry = new ToolRegistry({ allowedOrigins: null })
  t.equal(registry.compile(look).preparesInPlace, false, 'plain properties: arguments pass as they came')
  t.equal(registry.compile({ ...look, rewrite: [{ op: 'set', path: '/x', value: 1 }] }).preparesInPlace, true, 'a rewrite')
  const cases: Array<[string, unknown, boolean]> = [
    ['no schema keywords', { type: 'object' }, false],
    ['a default of a property', { type: 'object', properties: { n: { type: 'integer', default: 1 } } }, true],
    ['a default deep in an array item', { type: 'object', properties: { l: { type: 'array', items: [{ type: 'object', properties: { z: { default: 0 } } }] } } }, true],
    ['a default inside $defs', { type: 'object', $defs: { p: { properties: { n: { default: 1 } } } } }, true],
    ['a $ref', { type: 'object', properties: { p: { $ref: '#/$defs/p' } }, $defs: { p: { type: 'integer' } } }, true],
    ['a $dynamicRef', { type: 'object', properties: { p: { $dynamicRef: '#meta' } } }, true],
    ['a property named "default" (a needless yes)', { type: 'object', properties: { default: { type: 'string' } } }, true]
  ]
  for (const [name, schema, expected] of cases) t.equal(preparesInPlace(schema, false), expected, name)
})

t.test('a tool with a schema problem and an executor URL problem lists both, each place once, enums with their values', async (t) => {
  const registry = new ToolRegistry({ allowedOrigins: null })
  const problems = problemsOf(() => registry.putAll([
    { ...build, name: 'both', execution: 'sometimes', executor: { url: 'ftp://h/x', statusUrl: 'gopher://h/s' } },
    { ...build, name: 'nourl', executor: { timeoutMs: 1000 } }
  ]))
  t.ok(problems.some((p) => p.startsWith('tools[0] (both)') && /execution.*one of "auto", "parallel", "sequential"/.test(p)), 'the enum names its allowed values')
  t.ok(problems.some((p) => p.startsWith('tools[0] (both)') && /\/executor\/url: must be http or https/.test(p)), 'the ftp URL, beside the schema problem')
  t.ok(problems.some((p) => p.startsWith('tools[0] (both)') && /\/executor\/statusUrl: must be http or https/.test(p)), 'the status URL too')
  t.equal(problems.filter((p) => p.startsWith('tools[1] (nourl)') && p.includes('/executor/url')).length, 1, 'a missing url is reported once')
  t.equal(new Set(problems).size, problems.length, 'no problem twice')
})

t.test('conflictScope defaults to run and conflictWaitMs to 30000; tenant scope needs a conflict key', async (t) => {
  const registry = new ToolRegistry({ allowedOrigins: null })
  const plain = registry.compile(build)
  t.equal(plain.conflictScope, 'run')
  t.equal(plain.conflictWaitMs, 30000)
  t.match(plain.definition, { conflictScope: 'run', conflictWaitMs: 30000 })
  const tenant = registry.compile({ ...build, conflictScope: 'tenant', conflictWaitMs: 0 })
  t.equal(tenant.conflictScope, 'tenant')
  t.equal(tenant.conflictWaitMs, 0)
  const keyless = { name: 'edit', inputSchema: { type: 'object' }, executor: { url: `${URL_BASE}/edit` }, conflictScope: 'tenant' }
  const problems = (() => {
    try {
      registry.compile(keyless)
    } catch (err) {
      if (err instanceof InvalidToolError) return err.problems
      throw err
    }
    return []
  })()
  t.ok(problems.some((p) => p.startsWith('/conflictScope')), 'a tenant-scoped tool without a conflict key is refused at /conflictScope')
  t.throws(() => registry.compile({ ...build, conflictScope: 'world' }), InvalidToolError)
  t.throws(() => registry.compile({ ...build, conflictWaitMs: -1 }), InvalidToolError)
})
