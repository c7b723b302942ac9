/**
 * Builds the service once into a temporary directory for tests that start a
 * real process: every TypeScript file transpiled alone (no type check; the
 * typecheck step does that), beside a link to node_modules.
 */
import { mkdtemp, mkdir, readdir, readFile, rm, symlink, writeFile, copyFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const FOLDERS = ['src', 'routes', 'schemas', 'examples']

async function * files (dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield * files(path)
    else yield path
  }
}

export interface Build {
  dir: string
  /** The process entry point, as `npm start` runs it. */
  server: string
}

/** Transpiles the service into a fresh directory, removed on teardown. */
export async function buildService (t: { teardown: (fn: () => unknown) => void }): Promise<Build> {
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-build-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await writeFile(join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
  for (const folder of FOLDERS) {
    for await (const path of files(join(ROOT, folder))) {
      const out = join(dir, relative(ROOT, path))
      await mkdir(dirname(out), { recursive: true })
      if (path.endsWith('.json')) {
        await copyFile(path, out)
      } else if (path.endsWith('.ts') && !path.endsWith('.d.ts')) {
        const { outputText } = ts.transpileModule(await readFile(path, 'utf8'), {
          fileName: path,
          compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true, sourceMap: false }
        })
        await writeFile(out.replace(/\.ts$/, '.js'), outputText)
      }
    }
  }
  return { dir, server: join(dir, 'src/server.js') }
}
