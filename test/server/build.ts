/**
 * The service built for tests that start a real process (the server tests,
 * the replicas, the soak, the hostile bounds) and for the bench's tests:
 * every TypeScript file of the folders `npm run build` builds
 * (tsconfig.build.json's `include`: src, routes, schemas, examples, bench,
 * scripts) transpiled alone (no type check; the typecheck step does that),
 * beside a link to node_modules.
 *
 * Transpiling the tree costs about 6 s of CPU, and a dozen tests in eight
 * files of the suite want it, and every bench test, so the build is made
 * once per content of the sources: under the system's temp directory,
 * named by a hash of every source file, the TypeScript version and this
 * file, and shared by every test process (written to a directory of its
 * own and renamed into place, so no process sees half a build). A build
 * nobody has used for a day is removed. Tests read the build and never
 * write into it: files of their own go in a directory of their own.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type TypeScript from 'typescript'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const FOLDERS = (JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] }).include
const CACHE = join(tmpdir(), 'toolgate-test-builds')
/** Written last into a finished build; its time is the build's last use. */
const DONE = '.built'
const UNUSED_FOR_MS = 24 * 3600 * 1000

const require = createRequire(import.meta.url)

function files (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((entry) => entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)])
}

export interface Build {
  /** The build's root: shared by every test, to be read, never written into. */
  dir: string
  /** The process entry point, as `npm start` runs it. */
  server: string
}

/** The build of the sources as they are now: made on first use, then the same directory for every test process. */
export function builtService (): Build {
  const sources = FOLDERS.flatMap((folder) => files(join(ROOT, folder))).filter((path) => path.endsWith('.json') || (path.endsWith('.ts') && !path.endsWith('.d.ts')))
  const hash = createHash('sha256')
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .update(String((require('typescript/package.json') as { version: string }).version))
    .update(ROOT)
  for (const path of sources) hash.update(`\0${relative(ROOT, path)}\0`).update(readFileSync(path))
  const dir = join(CACHE, hash.digest('hex').slice(0, 32))
  const build = { dir, server: join(dir, 'src', 'server.js') }
  if (existsSync(join(dir, DONE))) {
    const now = new Date()
    utimesSync(join(dir, DONE), now, now)
    return build
  }

  // Loaded only to build: a process that finds the build made saves the half second it takes.
  const ts = require('typescript') as typeof TypeScript
  const partial = `${dir}.${process.pid}.${Math.random().toString(36).slice(2)}`
  for (const path of sources) {
    const out = join(partial, relative(ROOT, path))
    mkdirSync(dirname(out), { recursive: true })
    if (path.endsWith('.json')) {
      writeFileSync(out, readFileSync(path))
    } else {
      const { outputText } = ts.transpileModule(readFileSync(path, 'utf8'), {
        fileName: path,
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true, sourceMap: false }
      })
      writeFileSync(out.replace(/\.ts$/, '.js'), outputText)
    }
  }
  writeFileSync(join(partial, 'package.json'), JSON.stringify({ type: 'module' }))
  symlinkSync(join(ROOT, 'node_modules'), join(partial, 'node_modules'), 'dir')
  writeFileSync(join(partial, DONE), '')
  try {
    renameSync(partial, dir)
  } catch (err) {
    // Another test process finished the same build first: use that one.
    rmSync(partial, { recursive: true, force: true })
    if (!existsSync(join(dir, DONE))) throw err
  }
  removeUnused(dir)
  return build
}

/** Removes the builds (of other sources) nobody has used for a day, and partial ones as old. */
function removeUnused (keep: string): void {
  for (const name of readdirSync(CACHE)) {
    const path = join(CACHE, name)
    if (path === keep) continue
    try {
      const used = existsSync(join(path, DONE)) ? statSync(join(path, DONE)) : statSync(path)
      if (Date.now() - used.mtimeMs > UNUSED_FOR_MS) rmSync(path, { recursive: true, force: true })
    } catch {
      // Removed by another process meanwhile.
    }
  }
}
