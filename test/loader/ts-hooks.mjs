// Module hooks for the tests (registered by ts.mjs): a relative import of
// `x.js` finds `x.ts` when there is no `x.js`, as TypeScript's NodeNext
// resolution does, and a .ts file loads as an ES module transpiled with
// tsconfig.json's options (no type checking), with an inline source map so
// stack traces name the .ts lines. Transpiled text is cached under the
// system's temp directory by a hash of the source, the options and the
// TypeScript version, so each file is transpiled once for the whole suite.
//
// Every ES module a test process loads goes through these hooks, which run
// on a thread of their own below Node 22: a round trip between the threads
// for each resolve and each load, about 1.3 ms of CPU a module. A few
// packages ship both an ES build of hundreds of small files and a CommonJS
// build (whose files Node's require loads without the hooks); an import of
// those takes the CommonJS build, which cuts a test process that builds the
// service from about 830 hooked modules to under 300 (see CJS_BUILDS).
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { pid } from 'node:process'
import { dirname, join } from 'node:path'
import { URL, fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const CACHE = join(tmpdir(), 'toolgate-test-ts-cache')

let compiler

/** TypeScript and the options, loaded only when a file is not in the cache yet. */
async function typescript () {
  compiler ??= (async () => {
    const ts = (await import('typescript')).default
    const read = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile)
    const { options } = ts.parseJsonConfigFileContent(read.config, ts.sys, ROOT)
    // No outDir or rootDir: the source map then names the .ts file beside the module it maps.
    const compilerOptions = { ...options, outDir: undefined, rootDir: undefined, module: ts.ModuleKind.ESNext, sourceMap: false, inlineSourceMap: true, inlineSources: true, declaration: false, noEmit: false }
    return { ts, compilerOptions }
  })()
  return compiler
}

/** What every cached file depends on besides its own text: this file, tsconfig.json and the TypeScript version. */
let stamp
async function versionStamp () {
  stamp ??= (async () => {
    const own = await readFile(fileURLToPath(import.meta.url), 'utf8')
    const config = await readFile(join(ROOT, 'tsconfig.json'), 'utf8')
    const tsPackage = await readFile(createRequire(import.meta.url).resolve('typescript/package.json'), 'utf8')
    return createHash('sha256').update(own).update(config).update(JSON.parse(tsPackage).version).digest('hex')
  })()
  return stamp
}

/**
 * Packages imported through their CommonJS build in the tests: TypeBox (218
 * ES files), zod (115) and zod-to-json-schema (39; both through the MCP SDK),
 * and tap itself (about 150; its CommonJS entry exports the root test as
 * `module.exports`, so `import t from 'tap'` is the same object). Each is
 * built from one source into both forms, and every import of one in a test
 * process takes the same build, so there is one copy of each. The service's
 * own processes (`npm start`, the image, the tests that start it as a
 * process) load the ES builds.
 */
const CJS_BUILDS = /^(@sinclair\/typebox|zod|zod-to-json-schema|tap)(\/|$)/

export async function resolve (specifier, context, next) {
  if (CJS_BUILDS.test(specifier) && context.conditions.includes('import')) {
    return next(specifier, { ...context, conditions: context.conditions.map((c) => (c === 'import' ? 'require' : c)) })
  }
  try {
    return await next(specifier, context)
  } catch (err) {
    const relative = specifier.startsWith('./') || specifier.startsWith('../') || specifier.startsWith('/') || specifier.startsWith('file:')
    if (!relative || !specifier.endsWith('.js') || context.parentURL === undefined) throw err
    const url = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL)
    if (!existsSync(fileURLToPath(url))) throw err
    return { url: url.href, format: 'module', shortCircuit: true }
  }
}

export async function load (url, context, next) {
  if (!url.startsWith('file:') || !new URL(url).pathname.endsWith('.ts')) return next(url, context)
  const where = new URL(url)
  where.search = ''
  where.hash = ''
  const file = fileURLToPath(where)
  const source = await readFile(file, 'utf8')
  const key = createHash('sha256').update(await versionStamp()).update(file).update('\0').update(source).digest('hex')
  const cached = join(CACHE, `${key}.js`)
  try {
    return { format: 'module', source: await readFile(cached, 'utf8'), shortCircuit: true }
  } catch {
    // Not cached yet: transpile it, and write it so that another process never sees half a file.
  }
  const { ts, compilerOptions } = await typescript()
  const { outputText } = ts.transpileModule(source, { compilerOptions, fileName: file })
  await mkdir(CACHE, { recursive: true })
  const partial = `${cached}.${pid}.${Math.random().toString(36).slice(2)}`
  await writeFile(partial, outputText)
  await rename(partial, cached)
  return { format: 'module', source: outputText, shortCircuit: true }
}
