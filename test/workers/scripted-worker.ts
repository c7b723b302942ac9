/** A worker for test/workers/pool.test.ts: does what each request says, as a pool's worker (src/workers/pool.ts). */
import { parentPort, workerData } from 'node:worker_threads'

interface Request { id: number, act: 'echo' | 'spin' | 'forgetful' | 'crash', value?: unknown, full: boolean }

const port = parentPort!
if ((workerData as { broken?: boolean } | undefined)?.broken === true) throw new Error('this worker cannot load')
port.on('message', (request: Request) => {
  if (request.act === 'forgetful' && !request.full) {
    port.postMessage({ id: request.id, again: true })
    return
  }
  port.postMessage({ id: request.id, started: true })
  if (request.act === 'spin') for (;;);
  if (request.act === 'crash') process.exit(3)
  port.postMessage({ id: request.id, done: { value: request.value, full: request.full } })
})
port.postMessage({ ready: true })
