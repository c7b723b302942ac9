/**
 * Preloaded (`node --import`) into a toolgate bench child by bench/tail.ts:
 * it notes the collector's pauses (perf_hooks 'gc' entries), the event
 * loop's delay, and how long each Redis command took from the client's
 * send to its reply (ioredis' sendCommand, so the queue on the connection
 * and the event loop's own delay are in it, and the server's time too),
 * and answers them, since the last ask, on a `{type: 'probe'}` message.
 * Arguments are never looked at: only command names and times.
 */
import { createRequire } from 'node:module'
import { PerformanceObserver, monitorEventLoopDelay, performance } from 'node:perf_hooks'

/** [start, duration] in ms of this process's clock; `at` gives it as epoch ms. */
export interface ProbeAnswer {
  type: 'probe'
  id: number
  /** performance.timeOrigin: add it to a start for epoch ms, comparable across processes. */
  origin: number
  gcs: Array<[number, number, number]>
  commands: Array<[number, number, string]>
  loopDelayMs: { p50: number, p99: number, max: number }
}

let gcs: ProbeAnswer['gcs'] = []
let commands: ProbeAnswer['commands'] = []
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcs.push([e.startTime, e.duration, ((e as { detail?: { kind?: number } }).detail)?.kind ?? 0])
}).observe({ entryTypes: ['gc'] })
const delay = monitorEventLoopDelay({ resolution: 1 })
delay.enable()

interface Command { name: string, promise: Promise<unknown> }
const { Redis } = createRequire(import.meta.url)('ioredis') as { Redis: { prototype: { sendCommand: (this: unknown, command: Command, stream?: unknown) => unknown } } }
const send = Redis.prototype.sendCommand
Redis.prototype.sendCommand = function (command, stream) {
  const t0 = performance.now()
  command.promise.then(() => { commands.push([t0, performance.now() - t0, command.name]) }, () => {})
  return send.call(this, command, stream)
}

process.on('message', (msg: { type?: string, id?: number }) => {
  if (msg.type !== 'probe' || msg.id === undefined) return
  const answer: ProbeAnswer = {
    type: 'probe',
    id: msg.id,
    origin: performance.timeOrigin,
    gcs,
    commands,
    loopDelayMs: { p50: delay.percentile(50) / 1e6, p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 }
  }
  gcs = []
  commands = []
  delay.reset()
  process.send?.(answer)
})
