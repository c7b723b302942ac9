import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Ajv2020Module from 'ajv/dist/2020.js'
import t from 'tap'
import { TOOLS_FILE_SCHEMA_PATH, renderToolsFileSchema } from '../../src/tools/file-schema.js'
import { readToolsDocument } from '../../src/tools/load.js'
import { buildTestApp } from '../helper.js'

const Ajv2020 = Ajv2020Module.default
const ROOT = new URL('../../', import.meta.url)
const checkedIn = await readFile(new URL(TOOLS_FILE_SCHEMA_PATH, ROOT), 'utf8')
const validate = new Ajv2020({ strict: true, allErrors: true }).compile(JSON.parse(checkedIn))

const look = { name: 'look', inputSchema: { type: 'object' }, executor: { url: 'http://127.0.0.1:9000/tools/look' }, readOnly: true }

t.test(`${TOOLS_FILE_SCHEMA_PATH} is exactly what the TypeBox schemas generate (run \`npm run tools-schema\` after changing them)`, async (t) => {
  t.equal(checkedIn, renderToolsFileSchema())
})

t.test('the bundled example tools file, $schema member included, is valid under the JSON Schema', async (t) => {
  const example = JSON.parse(await readFile(new URL('examples/tools.json', ROOT), 'utf8'))
  t.equal(example.$schema, '../schemas/tools-file.schema.json', 'it names the schema for editors')
  t.ok(validate(example), JSON.stringify(validate.errors))
})

t.test('the JSON Schema refuses what the loader refuses, at the member that is wrong', async (t) => {
  const cases: Array<[string, unknown, string]> = [
    ['a misspelt field of a tool', { tools: [{ ...look, readonly: true }] }, '/tools/0'],
    ['a tool name with a space', { tools: [{ ...look, name: 'look around' }] }, '/tools/0/name'],
    ['a timeout of zero', { tools: [{ ...look, executor: { url: 'http://x', timeoutMs: 0 } }] }, '/tools/0/executor/timeoutMs'],
    ['an MCP server without a transport', { tools: [], mcpServers: [{ name: 'files', command: 'x' }] }, '/mcpServers/0'],
    ['a misspelt top-level member', { tools: [], mcpservers: [] }, ''],
    ['no tools', { mcpServers: [] }, '']
  ]
  for (const [what, doc, at] of cases) {
    t.notOk(validate(doc), what)
    t.ok(validate.errors?.some((e) => e.instancePath === at), `${what}: an error at "${at}" (${JSON.stringify(validate.errors?.map((e) => e.instancePath))})`)
  }
  t.ok(validate({ tools: [look], mcpServers: [{ name: 'files', transport: 'stdio', command: 'node', args: ['server.js'], trust: 'trusted', tools: { read_file: { readOnly: true } } }] }), JSON.stringify(validate.errors))
})

t.test('the loader ignores a $schema member, in JSON and in YAML, and the tools it holds are registered', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-tools-file-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await writeFile(join(dir, 'tools.json'), JSON.stringify({ $schema: '../schemas/tools-file.schema.json', tools: [look] }))
  await writeFile(join(dir, 'tools.yaml'), `# yaml-language-server: $schema=${TOOLS_FILE_SCHEMA_PATH}\n$schema: ${TOOLS_FILE_SCHEMA_PATH}\ntools:\n  - ${JSON.stringify(look)}\n`)
  for (const file of ['tools.json', 'tools.yaml']) {
    const doc = await readToolsDocument(join(dir, file))
    t.strictSame(doc, { tools: [look], mcpServers: [] }, `${file}: only the tools and servers are read`)
    const { app } = await buildTestApp(t)
    app.services.tools.putAll(doc.tools)
    t.ok(app.services.tools.get('look'), `${file}: the tool is registered`)
  }
})
