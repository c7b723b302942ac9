/**
 * Loaded into the service process under test (`node --import`): measures
 * the event loop's stalls that the process spent running, as opposed to
 * waiting for a CPU on a shared machine. A timer is due every TICK_MS; each
 * time it fires late, the lateness counts as a busy stall up to the CPU time
 * the process used meanwhile. On SIGUSR2 it writes one line to stderr,
 * `stall-probe {"maxBusyMs":…,"maxDelayMs":…}`, and starts over.
 */
import { performance } from 'node:perf_hooks'
import process from 'node:process'
import { setTimeout } from 'node:timers'

const TICK_MS = 5
let maxBusyMs = 0
let maxDelayMs = 0
let lastWall = performance.now()
let lastCpu = process.cpuUsage()

function tick () {
  const wall = performance.now()
  const cpu = process.cpuUsage()
  const delayMs = wall - lastWall - TICK_MS
  const cpuMs = (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000
  maxDelayMs = Math.max(maxDelayMs, delayMs)
  maxBusyMs = Math.max(maxBusyMs, Math.min(delayMs, cpuMs))
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
