/**
 * Real toolgate processes for the replica tests: each replica is
 * `node src/server.js` of the service's test build (../server/build.ts: the
 * sources transpiled once per content, shared by every test process).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { builtService } from '../server/build.js'

type Tap = { teardown: (fn: () => unknown) => void }

/** The path of the test build's server.js. */
export function buildToolgate (): string {
  return builtService().server
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
  let killed = false
  const exited = new Promise<void>((resolve) => child.once('exit', (code, signal) => {
    // A replica that ends when no test stopped it says why, for the failure it leaves behind.
    if (!killed) process.stderr.write(`replica ${name} exited (${code ?? signal}) on its own; its last lines:\n${output.slice(-30).join('\n')}\n`)
    resolve()
  }))
  const kill = async (): Promise<void> => {
    killed = true
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
