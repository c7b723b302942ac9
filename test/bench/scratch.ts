/**
 * The bench's sources as plain JavaScript, for the bench tests. The bench
 * forks plain node processes (executor, relay, floor, toolgate, memory), and
 * starting each under the TypeScript loader costs seconds, so the bench runs
 * from the tests' shared build of the tree (test/server/build.ts: every
 * folder `npm run build` builds, transpiled once per content of the sources
 * for every test process that wants it) exactly as `npm run bench` runs it
 * from dist/. The build is only read: what a bench run writes goes to a
 * scratch directory of the test's own.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { builtService } from '../server/build.js'

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

/** Runs a bench script that prints a JSON report, asserts that it exited cleanly, and answers the report. */
export async function runReport<T> (t: { equal: (found: unknown, wanted: unknown, message: string) => unknown }, args: string[], timeoutMs: number): Promise<T> {
  const run = await runNode(args, timeoutMs)
  t.equal(run.code, 0, `the comparison exits cleanly${run.code === 0 ? '' : `: ${run.stderr.slice(-2000)}`}`)
  return JSON.parse(run.stdout) as T
}

/** The bench's sources as plain JavaScript: the shared build's root, to be read, never written into. */
export function benchTree (): string {
  return builtService().dir
}

/** A directory for what a bench run writes, removed after the test. */
export async function scratchDir (t: { teardown: (fn: () => unknown) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-bench-test-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}
