/**
 * The loop-delay histogram (perf_hooks.monitorEventLoopDelay) counts the
 * time a process waits for a CPU as delay: on a machine shared with other
 * work, an idle process's loop is delayed too. The hostile tests bound a
 * service's own stalls as its histogram's max beyond the max of an idle
 * reference process at the same priority over the same time (this one),
 * and report both.
 */
import { spawn } from 'node:child_process'
import { getPriority, setPriority } from 'node:os'
import { createInterface } from 'node:readline'

type Tap = { teardown: (fn: () => unknown) => void }

/** The stall bound of SPEC §19, on the service's loop delay beyond the reference's. */
export const STALL_BOUND_MS = 100

const SCRIPT = `
const { monitorEventLoopDelay } = require('node:perf_hooks')
const h = monitorEventLoopDelay({ resolution: 10 })
h.enable()
require('node:readline').createInterface({ input: process.stdin }).on('line', () => {
  process.stdout.write(JSON.stringify({ maxMs: h.max / 1e6 }) + '\\n')
  h.reset()
})
`

/** An idle process whose loop-delay max since the last reading `read` answers; at the priority of process `pid`. */
export async function startReference (t: Tap, pid: number = process.pid): Promise<{ read: () => Promise<number> }> {
  const child = spawn(process.execPath, ['-e', SCRIPT], { stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  t.teardown(async () => { child.kill(); await exited })
  try { setPriority(child.pid!, getPriority(pid)) } catch { /* it runs at normal priority, as the measured process then does */ }
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const read = async (): Promise<number> => {
    child.stdin.write('\n')
    const { value } = await lines.next()
    return (JSON.parse(value as string) as { maxMs: number }).maxMs
  }
  await read()
  return { read }
}
