/**
 * Starting and stopping the bench's server processes. Every child is
 * remembered until it has exited, so `stopAll` (also run on SIGINT and
 * SIGTERM) leaves nothing behind.
 */
import { type ChildProcess, execFileSync, fork } from 'node:child_process'
import { extname } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ChildReply, ChildRequest } from './child.js'
import type { ProbeAnswer } from './tail-probe.js'

/** What a bench server has used so far. */
export interface ChildUsage { cpuUs: number, rss: number, loopActiveMs: number, loopIdleMs: number, storeRoundTrips: number, storeCommands: number }

/** A running bench server. */
export interface BenchChild {
  readonly role: string
  readonly url: string
  readonly pid: number
  /**
   * CPU time (user + system, every thread) the process has used so far, in
   * µs, its RSS in bytes, and how long its event loop has been busy and idle
   * so far (ms).
   */
  cpu (): Promise<ChildUsage>
  /**
   * What the probe preloaded into it noted since the last ask (bench/tail-probe.ts by default,
   * or bench/mcp-steps-probe.ts); only a child started with one answers.
   */
  probe<T extends { type: 'probe', id: number } = ProbeAnswer> (): Promise<T>
  /** Asks it to exit; kills it (by its pid) if it has not within `graceMs`. */
  stop (graceMs?: number): Promise<void>
}

export interface ChildOptions {
  /** Extra node flags, e.g. --cpu-prof. */
  nodeFlags?: string[]
  /** How long it may take to start (ts sources under a loader start slowly). */
  startTimeoutMs?: number
}

const live = new Set<ChildProcess>()
// Run the child from the same kind of file as this one: dist/bench/child.js, or bench/child.ts under a loader.
const EXT = extname(fileURLToPath(import.meta.url))
const CHILD = fileURLToPath(new URL(`./child${EXT}`, import.meta.url))

function exited (proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => proc.once('exit', () => resolve()))
}

export async function startChild (role: string, args: string[], opts: ChildOptions = {}): Promise<BenchChild> {
  const proc = fork(CHILD, [role, ...args], {
    execArgv: [...process.execArgv, ...(opts.nodeFlags ?? [])],
    // stdout is toolgate's log stream: discarded, as a log shipper would take it away.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc']
  })
  live.add(proc)
  proc.once('exit', () => live.delete(proc))

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`bench ${role} did not start within ${opts.startTimeoutMs ?? 60_000} ms`)), opts.startTimeoutMs ?? 60_000)
    const onExit = (code: number | null): void => {
      clearTimeout(timer)
      reject(new Error(`bench ${role} exited with code ${String(code)} before it was ready`))
    }
    proc.once('exit', onExit)
    proc.on('message', (msg: ChildReply) => {
      if (msg.type !== 'ready') return
      clearTimeout(timer)
      proc.off('exit', onExit)
      resolve(msg.url)
    })
  }).catch(async (err: unknown) => {
    proc.kill('SIGKILL')
    await exited(proc)
    throw err
  })

  let nextId = 0
  return {
    role,
    url,
    pid: proc.pid!,
    cpu () {
      const id = ++nextId
      return new Promise((resolve, reject) => {
        const onMessage = (msg: ChildReply): void => {
          if (msg.type !== 'cpu' || msg.id !== id) return
          proc.off('message', onMessage)
          resolve({ cpuUs: msg.userUs + msg.systemUs, rss: msg.rss, loopActiveMs: msg.loopActiveMs, loopIdleMs: msg.loopIdleMs, storeRoundTrips: msg.storeRoundTrips, storeCommands: msg.storeCommands })
        }
        proc.on('message', onMessage)
        if (!proc.connected) reject(new Error(`bench ${role} is gone`))
        else proc.send({ type: 'cpu', id } satisfies ChildRequest)
      })
    },
    probe<T extends { type: 'probe', id: number }> () {
      const id = ++nextId
      return new Promise<T>((resolve, reject) => {
        const onMessage = (msg: ChildReply | T): void => {
          if (msg.type !== 'probe' || msg.id !== id) return
          proc.off('message', onMessage)
          resolve(msg)
        }
        proc.on('message', onMessage)
        if (!proc.connected) reject(new Error(`bench ${role} is gone`))
        else proc.send({ type: 'probe', id } satisfies ChildRequest)
      })
    },
    async stop (graceMs = 5000) {
      if (proc.exitCode !== null || proc.signalCode !== null) return
      if (proc.connected) proc.send({ type: 'stop' } satisfies ChildRequest)
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs)
      await exited(proc)
      clearTimeout(timer)
    }
  }
}

/**
 * Runs a bench script (a module beside this one, named without extension) in
 * a fresh process and answers the first message it sends.
 */
export async function runScript (name: string, args: string[], nodeFlags: string[] = []): Promise<unknown> {
  const proc = fork(fileURLToPath(new URL(`./${name}${EXT}`, import.meta.url)), args, {
    execArgv: [...process.execArgv, ...nodeFlags],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  live.add(proc)
  proc.once('exit', () => live.delete(proc))
  const answer = new Promise<unknown>((resolve, reject) => {
    proc.once('message', resolve)
    proc.once('exit', (code) => reject(new Error(`bench ${name} exited with code ${String(code)} without an answer`)))
  })
  try {
    return await answer
  } finally {
    await exited(proc)
  }
}

/** Gives a process (every thread of it) the given cores (Linux, taskset); throws where taskset is missing or refuses. */
export function pin (pid: number, cores: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cores, String(pid)], { stdio: 'ignore' })
}

/** Kills every child still running (by pid) and waits for them to exit. */
export async function killAll (): Promise<void> {
  const procs = [...live]
  for (const proc of procs) proc.kill('SIGKILL')
  await Promise.all(procs.map(exited))
}

let trapped = false
/** On SIGINT/SIGTERM, kill the children before exiting. */
export function trapSignals (): void {
  if (trapped) return
  trapped = true
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void killAll().finally(() => process.exit(130))
    })
  }
}
