import { getEventListeners } from 'node:events'
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import t, { type Test } from 'tap'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import { classifyCallError } from '../../src/mcp/classify.js'
import { leanFetch } from '../../src/mcp/lean-fetch.js'

interface Seen { method: string, url: string, headers: IncomingMessage['headers'], body: string }

/** A server that answers each path its own way, and notes what each request brought. */
async function server (t: Test, answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ base: string, seen: Seen[] }> {
  const seen: Seen[] = []
  const srv: Server = createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (c: Buffer) => parts.push(c))
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(parts).toString() })
      answer(req, res)
    })
  })
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { srv.closeAllConnections(); srv.close() })
  return { base: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen }
}

/** A fallback that notes what it was given and answers 599. */
function noting (): { fetch: FetchLike, given: Array<{ url: string | URL, init?: RequestInit }> } {
  const given: Array<{ url: string | URL, init?: RequestInit }> = []
  return { given, fetch: async (url, init) => { given.push({ url, init }); return new Response('fallback', { status: 599 }) } }
}

const JSON_ANSWER = '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'

t.test('a POST as the SDK sends it: headers and body arrive whole, the JSON answer is read as fetch reads it', async (t) => {
  const { base, seen } = await server(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1', 'set-cookie': ['a=1', 'b=2'] })
    res.end(JSON_ANSWER)
  })
  const fallback = noting()
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: { text: 'é'.repeat(1000) } } })
  const headers = new Headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-tenant': 'blue' })
  const res = await leanFetch(fallback.fetch)(new URL(`${base}/mcp`), { method: 'POST', headers, body, redirect: 'manual', signal: new AbortController().signal })
  t.ok(res instanceof Response)
  t.equal(res.status, 200)
  t.equal(res.ok, true)
  t.equal(res.headers.get('mcp-session-id'), 's1')
  t.same(res.headers.getSetCookie(), ['a=1', 'b=2'])
  t.equal(res.bodyUsed, false)
  t.same(await res.json(), JSON.parse(JSON_ANSWER))
  t.equal(res.bodyUsed, true)
  await t.rejects(res.text(), TypeError, 'a body is read once')
  t.equal(seen.length, 1)
  t.equal(seen[0]!.method, 'POST')
  t.equal(seen[0]!.url, '/mcp')
  t.equal(seen[0]!.body, body)
  t.equal(seen[0]!.headers['content-length'], String(Buffer.byteLength(body)))
  t.equal(seen[0]!.headers['x-tenant'], 'blue')
  t.equal(seen[0]!.headers.accept, 'application/json, text/event-stream')
  t.equal(seen[0]!.headers['user-agent'], 'toolgate')
  t.same(fallback.given, [], 'nothing went to the fallback')
})

t.test('an informational answer before the answer (103 Early Hints) is passed over, as fetch passes it', async (t) => {
  const { base } = await server(t, (_req, res) => {
    res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' })
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON_ANSWER)
  })
  const res = await leanFetch(noting().fetch)(base, { method: 'POST', body: '{}', redirect: 'manual' })
  t.equal(res.status, 200)
  t.same(await res.json(), JSON.parse(JSON_ANSWER))
})

t.test('an SSE answer is a web stream read as it comes', async (t) => {
  let finish = (): void => {}
  const { base } = await server(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write('event: message\ndata: {"a":1}\n\n')
    finish = () => res.end('event: message\ndata: {"b":2}\n\n')
  })
  const res = await leanFetch(noting().fetch)(base, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' }, redirect: 'manual' })
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  const first = await reader.read()
  t.match(first.value, /"a":1/, 'the first event is read before the server has ended the answer')
  t.equal(res.bodyUsed, true, 'a locked stream is a used body')
  finish()
  let rest = ''
  for (let r = await reader.read(); r.done !== true; r = await reader.read()) rest += r.value
  t.match(rest, /"b":2/)
})

t.test('cancelling a body still coming stops the exchange: the server sees its connection close', async (t) => {
  let closed = (): void => {}
  const gone = new Promise<void>((resolve) => { closed = resolve })
  const { base } = await server(t, (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write('event: message\ndata: {"a":1}\n\n')
    req.socket.once('close', () => { closed() })
  })
  const session = new AbortController()
  const res = await leanFetch(noting().fetch)(base, { method: 'GET', redirect: 'manual', signal: session.signal })
  const reader = res.body!.getReader()
  t.ok((await reader.read()).value, 'the first event is read')
  await reader.cancel()
  await gone
  t.equal(getEventListeners(session.signal, 'abort').length, 0, 'no listener is left on the signal')
})

t.test('redirects are answered, never followed; under redirect: error one fails as fetch fails', async (t) => {
  const { base, seen } = await server(t, (_req, res) => { res.writeHead(307, { location: '/elsewhere' }); res.end() })
  const lean = leanFetch(noting().fetch)
  const res = await lean(base, { method: 'POST', body: '{}', redirect: 'manual' })
  t.equal(res.status, 307)
  t.equal(res.headers.get('location'), '/elsewhere')
  await t.rejects(lean(base, { method: 'POST', body: '{}', redirect: 'error' }), TypeError)
  t.equal(seen.filter((s) => s.url === '/elsewhere').length, 0, 'nothing was sent to the redirect\'s target')
})

t.test('a refused connection fails as fetch fails, and toolgate reads it as a call never sent', async (t) => {
  const { base } = await server(t, (_req, res) => res.end())
  const srv = createServer()
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  const closedPort = (srv.address() as AddressInfo).port
  await new Promise<void>((resolve) => srv.close(() => resolve()))
  t.ok(base)
  const err = await leanFetch(noting().fetch)(`http://127.0.0.1:${closedPort}/mcp`, { method: 'POST', body: '{}', redirect: 'manual' }).then(() => null, (e: unknown) => e)
  t.type(err, TypeError)
  t.equal((err as TypeError).message, 'fetch failed')
  t.equal(((err as TypeError).cause as { code?: string }).code, 'ECONNREFUSED')
  t.same(classifyCallError(err), { kind: 'unsent', code: 'ECONNREFUSED' })
})

t.test('an abort rejects with the signal\'s reason, before the answer and while its body is read', async (t) => {
  let release = (): void => {}
  const { base } = await server(t, (req, res) => {
    if (req.url === '/slow') { release = () => res.end('{}'); return }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.write('{"partial":')
  })
  const lean = leanFetch(noting().fetch)
  const before = new AbortController()
  const pending = lean(`${base}/slow`, { method: 'POST', body: '{}', redirect: 'manual', signal: before.signal })
  const reason = new Error('the session closed')
  setTimeout(() => before.abort(reason), 20)
  await t.rejects(pending, reason)
  release()
  const during = new AbortController()
  const res = await lean(`${base}/body`, { method: 'POST', body: '{}', redirect: 'manual', signal: during.signal })
  const reading = res.text()
  during.abort(reason)
  await t.rejects(reading, reason)
})

t.test('the signal keeps no listener once the answer is read', async (t) => {
  const { base } = await server(t, (_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON_ANSWER) })
  const session = new AbortController()
  const lean = leanFetch(noting().fetch)
  for (let i = 0; i < 50; i++) await (await lean(base, { method: 'POST', body: '{}', redirect: 'manual', signal: session.signal })).json()
  t.equal(getEventListeners(session.signal, 'abort').length, 0)
})

t.test('a compressed answer is decoded, as fetch decodes it; an abort while it is read ends it with the reason', async (t) => {
  const zipped = gzipSync(JSON_ANSWER)
  const { base } = await server(t, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
    // Under /partial, half of it, and then nothing.
    if (req.url === '/partial') res.write(zipped.subarray(0, zipped.length >> 1))
    else res.end(zipped)
  })
  const lean = leanFetch(noting().fetch)
  const session = new AbortController()
  for (let i = 0; i < 20; i++) t.same(await (await lean(base, { method: 'POST', body: '{}', redirect: 'manual', signal: session.signal })).json(), JSON.parse(JSON_ANSWER))
  t.equal(getEventListeners(session.signal, 'abort').length, 0, 'no listener is left on the signal')
  const res = await lean(`${base}/partial`, { method: 'POST', body: '{}', redirect: 'manual', signal: session.signal })
  const reading = res.text()
  const reason = new Error('the session closed')
  session.abort(reason)
  await t.rejects(reading, reason)
})

t.test('a body-less answer: 204 and 202', async (t) => {
  const { base } = await server(t, (req, res) => { res.writeHead(req.url === '/none' ? 204 : 202); res.end() })
  const lean = leanFetch(noting().fetch)
  const none = await lean(`${base}/none`, { method: 'DELETE', redirect: 'manual' })
  t.equal(none.status, 204)
  t.equal(none.body, null)
  const accepted = await lean(`${base}/accepted`, { method: 'POST', body: '{}', redirect: 'manual' })
  t.equal(accepted.status, 202)
  await accepted.body?.cancel()
  t.pass('a 202\'s body can be cancelled, as the SDK does')
})

t.test('what the SDK does not send goes to the fallback as it is', async (t) => {
  const { base, seen } = await server(t, (_req, res) => res.end())
  const fallback = noting()
  const lean = leanFetch(fallback.fetch)
  const form = new URLSearchParams({ grant_type: 'client_credentials' })
  t.equal((await lean(base, { method: 'POST', body: form, redirect: 'manual' })).status, 599, 'a form body')
  t.equal((await lean(base, { method: 'GET' })).status, 599, 'a redirect to follow')
  t.equal((await lean('data:text/plain,hi', { redirect: 'manual' })).status, 599, 'a URL that is not http')
  t.equal(fallback.given.length, 3)
  t.equal(fallback.given[0]!.init?.body, form)
  t.equal(seen.length, 0, 'the lean path sent none of them')
})
