import t from 'tap'
import { RequestIds, requestIdsOf } from '../../src/mcp-server/request-ids.js'
import { buildTestApp, holdCalls, sleep, startExecutor, tool } from '../helper.js'

/**
 * A request whose JSON-RPC id is in flight in its session (src/mcp-server/
 * request-ids.ts): answers are matched to requests by id, so such a
 * request is refused (-32600), never run, and the request in flight gets
 * its own answer. An id is free again once answered.
 */
const executor = await startExecutor(t)
const { app } = await buildTestApp(t, {
  config: { host: '127.0.0.1' },
  tools: [
    tool('slow', executor.url, { readOnly: true }),
    tool('fast', executor.url, { readOnly: true }),
    tool('barrier', executor.url),
    tool('held', executor.url, { readOnly: true, requiresApproval: true })
  ]
})
const base = await app.listen({ port: 0, host: '127.0.0.1' })
executor.on('fast', () => ({ content: 'the fast answer' }))

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' }

function post (body: unknown, session?: string): Promise<Response> {
  return fetch(`${base}/mcp`, { method: 'POST', headers: { ...HEADERS, ...(session === undefined ? {} : { 'mcp-session-id': session }) }, body: JSON.stringify(body) })
}

/** A session opened as a client opens one: initialize, then initialized. */
async function open (): Promise<string> {
  const res = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })
  await res.text()
  const session = res.headers.get('mcp-session-id')!
  await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session)).text()
  t.teardown(async () => { await fetch(`${base}/mcp`, { method: 'DELETE', headers: { ...HEADERS, 'mcp-session-id': session } }) })
  return session
}

function call (session: string, id: string | number, name: string): Promise<Response> {
  return post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } }, session)
}

/** The JSON-RPC answers of a response, JSON or an event stream. */
async function answersOf (res: Response): Promise<Array<{ id: unknown, result?: { content: Array<{ text: string }> }, error?: { code: number, message: string } }>> {
  const text = await res.text()
  if (!text.includes('data: ')) return [JSON.parse(text)].flat()
  return text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6))).filter((m) => !('method' in m))
}

const callsOf = (name: string): number => executor.calls.filter((c) => c.tool === name).length

t.test('a request with the id of one in flight in its session is refused and not run; the first gets its own answer', async (t) => {
  const session = await open()
  const gate = holdCalls(executor, 'slow', { content: 'the slow answer' })
  const first = call(session, 5, 'slow')
  await gate.started
  const fastBefore = callsOf('fast')
  const second = await call(session, 5, 'fast')
  t.equal(second.status, 400, 'refused at once, while the first is in flight')
  // Had it run, its answer would be out before the first's: wait for that, or half a second.
  for (let i = 0; i < 50 && executor.calls.filter((c) => c.tool === 'fast' && c.endedAt !== null).length === fastBefore; i++) await sleep(10)
  gate.release()
  const [answer] = await answersOf(await first)
  t.equal(answer!.id, 5)
  t.match(answer!.result!.content[0]!.text, /the slow answer/, 'the first request got its own answer')
  const [refusal] = await answersOf(second)
  t.equal(refusal!.id, null)
  t.equal(refusal!.error?.code, -32600)
  t.match(refusal!.error?.message, /the id 5 is already in use by a request in flight in this session/)
  t.equal(callsOf('fast'), fastBefore, 'the refused request was never run')
  const [again] = await answersOf(await call(session, 5, 'fast'))
  t.match(again!.result!.content[0]!.text, /the fast answer/, 'once answered, the id is free again')
})

t.test('1 and "1" are different ids: both run, each gets its own answer', async (t) => {
  const session = await open()
  const gate = holdCalls(executor, 'slow', { content: 'the slow answer' })
  const first = call(session, 1, 'slow')
  await gate.started
  const [second] = await answersOf(await call(session, '1', 'fast'))
  t.equal(second!.id, '1')
  t.match(second!.result!.content[0]!.text, /the fast answer/)
  gate.release()
  const [answer] = await answersOf(await first)
  t.equal(answer!.id, 1)
  t.match(answer!.result!.content[0]!.text, /the slow answer/)
})

t.test('a batch holding an id in flight, or one id twice, is refused whole and none of it runs', async (t) => {
  const session = await open()
  const gate = holdCalls(executor, 'slow', { content: 'the slow answer' })
  const first = call(session, 'c-7', 'slow')
  await gate.started
  const fastBefore = callsOf('fast')
  const request = (id: string | number): unknown => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'fast', arguments: {} } })
  const inFlight = await post([request(70), request('c-7')], session)
  t.equal(inFlight.status, 400)
  const twice = await post([request(71), request(71)], session)
  t.equal(twice.status, 400)
  gate.release()
  const [answer] = await answersOf(await first)
  t.match(answer!.result!.content[0]!.text, /the slow answer/)
  t.match(await answersOf(inFlight), [{ error: { code: -32600, message: /the id "c-7" is already in use/ } }])
  t.match(await answersOf(twice), [{ error: { code: -32600, message: /the id 71 is given to more than one request of this batch/ } }])
  t.equal(callsOf('fast'), fastBefore, 'nothing of either batch ran')
  const batch = await answersOf(await post([request(70), request(71)], session))
  t.same(batch.map((a) => a.id).sort(), [70, 71], 'their ids were never held: a batch with them runs')
})

t.test('a request the transport refuses holds no id', async (t) => {
  const session = await open()
  const body = JSON.stringify({ jsonrpc: '2.0', id: 13, method: 'tools/call', params: { name: 'fast', arguments: {} } })
  const refused = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '1999-01-01' }, body })
  t.equal(refused.status, 400, 'an unsupported protocol version')
  await refused.text()
  const [answer] = await answersOf(await call(session, 13, 'fast'))
  t.match(answer!.result!.content[0]!.text, /the fast answer/)
})

t.test('a cancelled call gets no answer, and its id is free again once its handler is done', async (t) => {
  const session = await open()
  // Not awaited: a held call's answer sends nothing, headers included, until it has something to say.
  const ended = call(session, 9, 'held').then(async (res) => res.text())
  for (let i = 0; i < 200 && (await app.inject({ method: 'GET', url: '/v1/approvals' })).json().approvals.length === 0; i++) await sleep(10)
  const cancel = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9, reason: 'the user pressed stop' } }, session)
  t.equal(cancel.status, 202)
  const text = await Promise.race([ended, sleep(5000).then(() => 'still open after 5 s')])
  t.notMatch(text, /"id":9/, 'no answer for the cancelled call')
  t.not(text, 'still open after 5 s', 'its response ended')
  const [answer] = await answersOf(await call(session, 9, 'fast'))
  t.equal(answer!.id, 9)
  t.match(answer!.result!.content[0]!.text, /the fast answer/)
})

t.test('a cancelled tools/list or ping gets no answer, and its id is free again', async (t) => {
  const session = await open()
  for (const [id, method] of [[7, 'tools/list'], ['p', 'ping']] as const) {
    // In one batch: the SDK starts the request's handler, then reads the cancellation before the handler is done.
    // The SDK's stream of a batch waits for every answer, and the cancelled request has none: the client lets go of it.
    const stop = new AbortController()
    const both = fetch(`${base}/mcp`, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': session }, body: JSON.stringify([{ jsonrpc: '2.0', id, method }, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }]), signal: stop.signal })
      .then(async (res) => await res.text()).catch(() => 'let go')
    let answer: Awaited<ReturnType<typeof answersOf>>[number] | undefined
    // The id is freed once the handler is done: a few turns of the event loop.
    for (let i = 0; i < 100 && answer?.error === undefined && answer?.id !== id; i++) {
      const again = await answersOf(await post({ jsonrpc: '2.0', id, method: 'ping' }, session))
      answer = again[0]
      if (answer?.error !== undefined) { answer = undefined; await sleep(10) }
    }
    t.equal(answer?.id, id, `the id of the cancelled ${method} is free again: a ping under it is answered`)
    stop.abort()
    t.notMatch(await both, /"result"/, `no answer for the cancelled ${method}`)
  }
})

t.test('a cancellation of id 0 or "" is honoured: the waiting call never runs', async (t) => {
  const session = await open()
  for (const id of [0, '']) {
    const gate = holdCalls(executor, 'slow', { content: 'the slow answer' })
    const first = call(session, `before-${String(id)}`, 'slow')
    await gate.started
    // A barrier: held until the call in flight has settled.
    const waiting = post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'barrier', arguments: {} } }, session).then(async (res) => res.text())
    await sleep(100)
    const barriersBefore = callsOf('barrier')
    await (await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }, session)).text()
    gate.release()
    await (await first).text()
    const text = await Promise.race([waiting, sleep(5000).then(() => 'still open after 5 s')])
    t.notMatch(text, /"result"/, `no answer for the cancelled call of id ${JSON.stringify(id)}`)
    await sleep(100)
    t.equal(callsOf('barrier'), barriersBefore, `the call of id ${JSON.stringify(id)} was never sent`)
  }
})

t.test('the ids a session holds: taken, held, dispatched, answered, released', async (t) => {
  const ids = new RequestIds()
  t.equal(ids.taken([1, '1', 'a']), undefined, 'nothing held yet')
  t.equal(ids.taken([2, 2]), 2, 'an id twice in one batch')
  const release = ids.hold([1, 'a'])
  t.equal(ids.taken([1]), 1)
  t.equal(ids.taken(['1']), undefined, '"1" is not 1')
  ids.dispatched(1, 'tools/call')
  release()
  t.equal(ids.taken(['a']), undefined, 'an id never dispatched is let go with its POST')
  t.equal(ids.taken([1]), 1, 'a dispatched id stays held until answered')
  t.equal(ids.answered(1), 'tools/call')
  t.equal(ids.taken([1]), undefined)
  t.equal(ids.answered(1), undefined, 'an answer for nothing held')
  t.same(requestIdsOf([{ id: 1, method: 'a' }, { id: 'x', method: 'b' }, { method: 'notifications/x' }, { id: 3, result: {} }, { id: null, method: 'c' }, 7]), [1, 'x'], 'requests only: not notifications, responses, or null ids')
  t.same(requestIdsOf({ id: 4, method: 'ping' }), [4])
  t.same(requestIdsOf(undefined), [])
})
