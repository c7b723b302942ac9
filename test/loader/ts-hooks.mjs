// Module hooks for the tests (registered by ts.mjs): a relative import of
// `x.js` finds `x.ts` when there is no `x.js`, as TypeScript's NodeNext
// resolution does, and a .ts file loads as an ES module transpiled with
// tsconfig.json's options (no type checking), with an inline source map so
// stack traces name the .ts lines. Transpiled text is cached under the
// system's temp directory by a hash of the source, the options and the
// TypeScript version, so each file is transpiled once for the whole suite.
//
// Every ES module a test process loads goes through these hooks. Where they
// run on a thread of their own (module.register; ts.mjs says when), each
// resolve and each load is a round trip between the threads, about 1.3 ms
// of CPU a module. A few packages ship both an ES build of hundreds of small
// files and a CommonJS build (whose files Node's require loads without the
// hooks); there an import of those takes the CommonJS build, which cuts a
// test process that builds the service from about 830 hooked modules to
// under 300 (see CJS_BUILDS). In the loading thread there is no round trip,
// and every package loads its ES build.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { pid } from 'node:process'
import { dirname, join } from 'node:path'
import { URL, fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const CACHE = join(tmpdir(), 'toolgate-test-ts-cache')
const require = createRequire(import.meta.url)

let compiler

/** TypeScript and the options, loaded only when a file is not in the cache yet. */
function typescript () {
  if (compiler === undefined) {
    const ts = require('typescript')
    const read = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile)
    const { options } = ts.parseJsonConfigFileContent(read.config, ts.sys, ROOT)
    // No outDir or rootDir: the source map then names the .ts file beside the module it maps.
    const compilerOptions = { ...options, outDir: undefined, rootDir: undefined, module: ts.ModuleKind.ESNext, sourceMap: false, inlineSourceMap: true, inlineSources: true, declaration: false, noEmit: false }
    compiler = { ts, compilerOptions }
  }
  return compiler
}

/** What every cached file depends on besides its own text: this file, tsconfig.json and the TypeScript version. */
let stamp
function versionStamp () {
  stamp ??= createHash('sha256')
    .update(readFileSync(fileURLToPath(import.meta.url), 'utf8'))
    .update(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8'))
    .update(JSON.parse(readFileSync(require.resolve('typescript/package.json'), 'utf8')).version)
    .digest('hex')
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

/** The conditions to resolve `specifier` with: a package of CJS_BUILDS imported resolves to its CommonJS build. */
function conditionsFor (specifier, context) {
  return CJS_BUILDS.test(specifier) && context.conditions.includes('import') ? { ...context, conditions: context.conditions.map((c) => (c === 'import' ? 'require' : c)) } : context
}

/** A relative import of `x.js` that found nothing: `x.ts` when it exists, else the error stands. */
function typescriptFile (specifier, context, err) {
  const relative = specifier.startsWith('./') || specifier.startsWith('../') || specifier.startsWith('/') || specifier.startsWith('file:')
  if (!relative || !specifier.endsWith('.js') || context.parentURL === undefined) throw err
  const url = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL)
  if (!existsSync(fileURLToPath(url))) throw err
  return { url: url.href, format: 'module', shortCircuit: true }
}

/** A .ts module's JavaScript: from the cache, or transpiled and cached. Undefined for any other URL. */
function transpiled (url) {
  if (!url.startsWith('file:')) return undefined
  const where = new URL(url)
  if (!where.pathname.endsWith('.ts')) return undefined
  where.search = ''
  where.hash = ''
  const file = fileURLToPath(where)
  const source = readFileSync(file, 'utf8')
  const key = createHash('sha256').update(versionStamp()).update(file).update('\0').update(source).digest('hex')
  const cached = join(CACHE, `${key}.js`)
  try {
    return { format: 'module', source: readFileSync(cached, 'utf8'), shortCircuit: true }
  } catch {
    // Not cached yet: transpile it, and write it so that another process never sees half a file.
  }
  const { ts, compilerOptions } = typescript()
  const { outputText } = ts.transpileModule(source, { compilerOptions, fileName: file })
  mkdirSync(CACHE, { recursive: true })
  const partial = `${cached}.${pid}.${Math.random().toString(36).slice(2)}`
  writeFileSync(partial, outputText)
  renameSync(partial, cached)
  return { format: 'module', source: outputText, shortCircuit: true }
}

// The hooks on a thread of their own (module.register).
export async function resolve (specifier, context, next) {
  const using = conditionsFor(specifier, context)
  try {
    return await next(specifier, using)
  } catch (err) {
    return typescriptFile(specifier, using, err)
  }
}

export async function load (url, context, next) {
  return transpiled(url) ?? next(url, context)
}

// The same hooks in the loading thread (module.registerHooks), where a module
// costs no round trip: every package loads its ES build, as in the service.
export function resolveSync (specifier, context, next) {
  try {
    return next(specifier, context)
  } catch (err) {
    return typescriptFile(specifier, context, err)
  }
}

export function loadSync (url, context, next) {
  return transpiled(url) ?? next(url, context)
}
