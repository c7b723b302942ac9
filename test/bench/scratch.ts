/**
 * The bench's sources as plain JavaScript in a scratch tree, for the bench
 * tests. The bench forks plain node processes (executor, relay, floor,
 * toolgate, memory), and starting each under the TypeScript loader costs
 * seconds, so the sources are transpiled once per test into a tree under
 * node_modules/.cache, and the bench runs from there exactly as `npm run
 * bench` runs it from dist/.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'

const root = resolve(import.meta.dirname, '../..')

async function transpileTree (out: string): Promise<void> {
  const { include } = JSON.parse(await readFile(join(root, 'tsconfig.build.json'), 'utf8')) as { include: string[] }
  const compilerOptions = { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true }
  for (const folder of include) {
    for (const entry of await readdir(join(root, folder), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue
      const from = join(entry.parentPath, entry.name)
      const to = join(out, relative(root, from))
      await mkdir(dirname(to), { recursive: true })
      if (entry.name.endsWith('.ts')) {
        const { outputText } = ts.transpileModule(await readFile(from, 'utf8'), { compilerOptions, fileName: from })
        await writeFile(to.replace(/\.ts$/, '.js'), outputText)
      } else if (entry.name.endsWith('.json')) {
        await writeFile(to, await readFile(from))
      }
    }
  }
  // Under node_modules Node does not look past the folder for "type": "module".
  await writeFile(join(out, 'package.json'), JSON.stringify({ name: 'toolgate-bench-smoke', private: true, type: 'module' }))
}

/** Runs a bench script under this Node; `extraEnv` adds to (or replaces in) this process's environment. */
export function runNode (args: string[], timeoutMs: number, extraEnv: Record<string, string> = {}): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const env = { ...process.env, ...extraEnv }
  delete env.NODE_OPTIONS // tap's own hooks are not wanted in the bench's processes
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => { stdout += String(d) })
  child.stderr.on('data', (d: Buffer) => { stderr += String(d) })
  const timer = setTimeout(() => child.kill('SIGINT'), timeoutMs)
  return new Promise((resolve) => child.once('close', (code) => {
    clearTimeout(timer)
    resolve({ code, stdout, stderr })
  }))
}


/** The bench's sources as plain JavaScript in a scratch tree, removed after the test. */
export async function scratchTree (t: { teardown: (fn: () => unknown) => void }): Promise<string> {
  await mkdir(join(root, 'node_modules', '.cache'), { recursive: true })
  const out = await mkdtemp(join(root, 'node_modules', '.cache', 'toolgate-bench-smoke-'))
  t.teardown(() => rm(out, { recursive: true, force: true }))
  await transpileTree(out)
  return out
}

