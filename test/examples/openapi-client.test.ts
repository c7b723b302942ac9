/**
 * The client generated from openapi.yaml (examples/openapi-client): its
 * types are what the generator makes of the checked-in spec, it compiles
 * under the strictest settings (and a wrong call does not), and it drives a
 * running toolgate.
 */
import { readFile } from 'node:fs/promises'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import ts from 'typescript'
import { parse } from 'yaml'
import { generateClientTypes } from '../../examples/openapi-client/generate.js'
import { ToolgateClient } from '../../examples/openapi-client/client.js'
import { firstTurn } from '../../examples/openapi-client/example.js'
import { buildTestApp, startExecutor, tool } from '../helper.js'

const dir = fileURLToPath(new URL('../../examples/openapi-client/', import.meta.url))

t.test('api.ts is what the generator makes of openapi.yaml', async (t) => {
  const spec = parse(await readFile(new URL('../../openapi.yaml', import.meta.url), 'utf8'))
  const made = generateClientTypes(spec)
  const kept = await readFile(join(dir, 'api.ts'), 'utf8')
  t.ok(made === kept, 'up to date (regenerate: npm run openapi)')
  t.ok(Object.keys(spec.paths).length > 20 && made.includes('runBatch: {'), 'every operation is there')
})

/** Compiler diagnostics of these files under strict settings, as text. */
function compile (files: string[]): string[] {
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
    types: ['node'],
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    noImplicitOverride: true,
    noPropertyAccessFromIndexSignature: false,
    skipLibCheck: true,
    noEmit: true
  })
  return ts.getPreEmitDiagnostics(program).map((d) => `${d.file?.fileName ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`)
}

t.test('the client and its example compile under strict settings with no error; a wrong call does not compile', async (t) => {
  t.strictSame(compile([join(dir, 'client.ts'), join(dir, 'example.ts')]), [], 'no type error')
  const tmp = await mkdtemp(join(tmpdir(), 'toolgate-client-'))
  t.teardown(() => rm(tmp, { recursive: true, force: true }))
  const wrong = join(tmp, 'wrong.ts')
  await writeFile(wrong, [
    `import { ToolgateClient } from '${join(dir, 'client.js')}'`,
    'const tg = new ToolgateClient(\'http://127.0.0.1:1\')',
    'export async function f (): Promise<void> {',
    '  await tg.call(\'getRun\', {})',
    '  await tg.call(\'listRuns\', { query: { state: \'sleeping\' } })',
    '  const run = await tg.call(\'createRun\', { body: {} })',
    '  run.data.nope.toString()',
    '}',
    ''
  ].join('\n'))
  const errors = compile([wrong]).filter((e) => e.startsWith(wrong))
  t.equal(errors.length, 3, `each wrong line is an error:\n${errors.join('\n')}`)
  t.match(errors.join('\n'), /params/, 'a missing path parameter')
  t.match(errors.join('\n'), /sleeping/, 'a state the spec does not list')
})

t.test('the client drives a running toolgate', async (t) => {
  const ex = await startExecutor(t)
  ex.on('look', () => ({ content: 'a tile' }))
  const { app } = await buildTestApp(t, {
    keysDoc: { keys: [{ key: 'typed-client-key', tenant: 'acme', roles: ['orchestrator'] }] },
    tools: [tool('look', ex.url, { readOnly: true })]
  })
  const base = (await app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1')
  const tg = new ToolgateClient(base, { apiKey: 'typed-client-key' })
  const seen = await firstTurn(tg, 'typed-1', [{ id: 'c1', name: 'look', arguments: { x: 1 } }, { id: 'c2', name: 'fly', arguments: {} }])
  t.strictSame(seen, { statuses: ['ok', 'rejected'], listed: true, missing: 'run_not_found' })
  await t.rejects(new ToolgateClient(base, { apiKey: 'wrong' }).call('listRuns'), { name: 'ToolgateError', status: 401, code: 'unauthorized' })
})
