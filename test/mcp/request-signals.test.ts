import { getEventListeners } from 'node:events'
import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t, { type Test } from 'tap'
import { liveRequests, ownSignals, requestSignal } from '../../src/mcp/request-signals.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** A server answering JSON at once, or, under /stream, one chunk and then nothing until the client goes. */
async function server (t: Test): Promise<string> {
  const srv: Server = createServer((req, res) => {
    if (req.url === '/stream') {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(': open\n\n')
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{"jsonrpc":"2.0","id":1,"result":{}}')
  })
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { srv.closeAllConnections(); srv.close() })
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}`
}

t.test('a session signal carries one listener however many requests it has', async (t) => {
  const base = await server(t)
  const session = new AbortController()
  const fetchOwn = ownSignals(fetch)
  for (let i = 0; i < 300; i++) {
    const res = await fetchOwn(base, { method: 'POST', body: '{}', signal: session.signal })
    t.equal(res.status, 200)
    await res.json()
  }
  t.equal(getEventListeners(session.signal, 'abort').length, 1, 'one listener, not one per request')
  // What the session's signal gathers when it is handed to every request as it is: the reason for the above.
  const plain = new AbortController()
  for (let i = 0; i < 50; i++) await (await fetch(base, { method: 'POST', body: '{}', signal: plain.signal })).json()
  t.ok(getEventListeners(plain.signal, 'abort').length > 1, 'undici adds one per request to a shared signal')
})

t.test('aborting the session aborts a request in flight, with the session\'s reason', async (t) => {
  const base = await server(t)
  const session = new AbortController()
  const res = await ownSignals(fetch)(`${base}/stream`, { signal: session.signal })
  const reader = res.body!.getReader()
  await reader.read()
  const reason = new Error('the session closed')
  session.abort(reason)
  await t.rejects(reader.read(), reason)
  t.equal(liveRequests(session.signal), 0, 'nothing is kept for an aborted session')
  await t.rejects(ownSignals(fetch)(base, { signal: session.signal }), reason, 'a request after the abort is refused with the same reason')
})

t.test('a request without a signal is passed on as it is', async (t) => {
  const seen: Array<RequestInit | undefined> = []
  const init = { method: 'POST' }
  await ownSignals(async (_url, i) => { seen.push(i); return new Response('{}') })('http://127.0.0.1:1/', init)
  t.equal(seen[0], init)
})

t.test('a request\'s entry goes once its signal is collected', async (t) => {
  const session = new AbortController()
  for (let i = 0; i < 100; i++) requestSignal(session.signal)
  t.equal(liveRequests(session.signal), 100)
  for (let i = 0; i < 50 && liveRequests(session.signal) > 0; i++) {
    gc()
    await sleep(10)
  }
  t.equal(liveRequests(session.signal), 0, 'every entry went with its collected signal')
  const kept = requestSignal(session.signal)
  gc()
  await sleep(20)
  t.equal(liveRequests(session.signal), 1, 'a signal still referenced keeps its entry')
  session.abort(new Error('closed'))
  t.ok(kept.aborted, 'and is aborted with its session')
})
