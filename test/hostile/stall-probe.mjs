/**
 * Loaded into the service process under test (`node --import`): measures
 * the event loop's stalls that the process spent running, as opposed to
 * waiting for a CPU on a shared machine. A timer is due every TICK_MS; each
 * time it fires late, the lateness counts as a busy stall up to the CPU time
 * the event loop's thread ran meanwhile. On Linux that is the thread's own
 * time on a CPU (`/proc/thread-self/schedstat`). Elsewhere it is the whole
 * process's CPU time, which also counts the collector's helper threads: on
 * a busy machine the loop can wait for a CPU while they run, and that wait
 * would read as a stall. On SIGUSR2 it writes one line to stderr,
 * `stall-probe {"maxBusyMs":…,"maxDelayMs":…}`, and starts over.
 */
import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import process from 'node:process'
import { setTimeout } from 'node:timers'

const THREAD_SCHEDSTAT = '/proc/thread-self/schedstat'

/** The CPU time (ms) this thread has run: the first field of its schedstat (ns), or null where there is none. */
function threadCpuMs () {
  try {
    return Number(readFileSync(THREAD_SCHEDSTAT, 'latin1').split(' ', 1)[0]) / 1e6
  } catch {
    return null
  }
}

const ownThread = threadCpuMs() !== null
/** CPU time (ms) that counts as the loop running: its own thread's where it can be read, else the process's. */
function cpuMs () {
  if (ownThread) return threadCpuMs()
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

const TICK_MS = 5
let maxBusyMs = 0
let maxDelayMs = 0
let lastWall = performance.now()
let lastCpu = cpuMs()

function tick () {
  const wall = performance.now()
  const cpu = cpuMs()
  const delayMs = wall - lastWall - TICK_MS
  maxDelayMs = Math.max(maxDelayMs, delayMs)
  maxBusyMs = Math.max(maxBusyMs, Math.min(delayMs, cpu - lastCpu))
  lastWall = wall
  lastCpu = cpu
  setTimeout(tick, TICK_MS).unref()
}
setTimeout(tick, TICK_MS).unref()

process.on('SIGUSR2', () => {
  process.stderr.write(`stall-probe ${JSON.stringify({ maxBusyMs, maxDelayMs })}\n`)
  maxBusyMs = 0
  maxDelayMs = 0
})
