/**
 * Real toolgate processes for the replica tests: the sources are transpiled
 * once (no type check, about a second) into a temporary directory that links
 * the project's node_modules, then each replica is `node src/server.js` there.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

type Tap = { teardown: (fn: () => unknown) => void }

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const SOURCES = ['src', 'routes', 'schemas', 'examples']

/** Transpiles the service into a temporary directory (removed on teardown); answers the path of its server.js. */
export function buildToolgate (t: Tap): string {
  const out = mkdtempSync(join(tmpdir(), 'toolgate-replicas-'))
  t.teardown(() => rmSync(out, { recursive: true, force: true }))
  const compilerOptions: ts.CompilerOptions = { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true }
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
        const { outputText } = ts.transpileModule(readFileSync(join(ROOT, path), 'utf8'), { compilerOptions, fileName: path })
        mkdirSync(join(out, dir), { recursive: true })
        writeFileSync(join(out, path.slice(0, -3) + '.js'), outputText)
      } else if (entry.name.endsWith('.json')) {
        mkdirSync(join(out, dir), { recursive: true })
        writeFileSync(join(out, path), readFileSync(join(ROOT, path)))
      }
    }
  }
  for (const dir of SOURCES) walk(dir)
  writeFileSync(join(out, 'package.json'), JSON.stringify({ type: 'module' }))
  symlinkSync(join(ROOT, 'node_modules'), join(out, 'node_modules'), 'dir')
  return join(out, 'src', 'server.js')
}

export interface Replica {
  name: string
  url: string
  process: ChildProcess
  /** Every line the process wrote, for the failure message of a test. */
  output: string[]
  /** SIGKILL: no drain, no lease released. */
  kill: () => Promise<void>
}

/** Starts one replica on a free port and waits until /readyz says ready. */
export async function startReplica (t: Tap, server: string, name: string, env: Record<string, string>): Promise<Replica> {
  const child = spawn(process.execPath, [server], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const output: string[] = []
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await exited
  }
  t.teardown(kill)
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = ''
    const onData = (chunk: Buffer): void => {
      buffered += chunk.toString()
      const lines = buffered.split('\n')
      buffered = lines.pop() ?? ''
      for (const line of lines) {
        output.push(line)
        const found = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(line)
        if (found !== null) resolve(found[1]!)
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('exit', (code, signal) => reject(new Error(`replica ${name} exited (${code ?? signal}) before listening:\n${output.join('\n')}`)))
  })
  for (let i = 0; i < 100; i++) {
    const ready = await fetch(`${url}/readyz`).then((r) => r.status, () => 0)
    if (ready === 200) return { name, url, process: child, output, kill }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`replica ${name} never became ready:\n${output.join('\n')}`)
}

/** An answer of a replica: its status and parsed JSON body, read field by field in assertions. */
export interface Answer { status: number, body: any }

/** A JSON request to a replica. */
export async function call (replica: Replica, method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(replica.url + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.text()
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) }
}
