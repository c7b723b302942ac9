/**
 * The stream of a server's notifications (the GET stream of Streamable
 * HTTP) is read event by event, each at most MAX_EVENT_BYTES: a longer one
 * ends the stream before it is read whole or parsed (SPEC section 19: no
 * tool server can hold toolgate's memory or loop with one huge message).
 */
import t from 'tap'
import { MAX_EVENT_BYTES, boundEvents, boundedFetch } from '../../src/mcp/bounded-fetch.js'

const enc = new TextEncoder()

function streamOf (chunks: string[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start (controller) {
      for (const c of chunks) controller.enqueue(enc.encode(c))
      controller.close()
    }
  })
}

async function readAll (s: ReadableStream<Uint8Array>): Promise<string> {
  return await new Response(s).text()
}

t.test('events within the bound pass unchanged, however they are cut into chunks', async (t) => {
  const text = `event: message\r\ndata: ${'a'.repeat(90)}\r\n\r\ndata: ${'b'.repeat(90)}\n\n`
  const chunks = [text.slice(0, 7), text.slice(7, 60), text.slice(60, 104), text.slice(104)]
  t.equal(await readAll(boundEvents(streamOf(chunks), 120)), text, 'each event is under 120 bytes, though the stream is not')
})

t.test('an event longer than the bound ends the stream, even in small chunks', async (t) => {
  const big = `data: ${'x'.repeat(200)}\n\n`
  await t.rejects(readAll(boundEvents(streamOf([big]), 100)), { message: /event longer than 100 bytes/ })
  const chunks = Array.from({ length: 50 }, () => 'data: yyyy\n')
  await t.rejects(readAll(boundEvents(streamOf(chunks), 100)), { message: /event longer than 100 bytes/ }, 'one event of many lines')
})

t.test("boundedFetch bounds the events of a GET stream and leaves the server's other answers to their own bounds", async (t) => {
  const huge = `data: ${'z'.repeat(MAX_EVENT_BYTES + 10)}\n\n`
  const sse = (body: string) => async () => new Response(body, { headers: { 'content-type': 'text/event-stream' } })
  const get = boundedFetch(1024, new Map(), sse(huge))
  const res = await get('http://127.0.0.1:1/mcp', { method: 'GET' })
  await t.rejects(res.text(), { message: /event longer than/ })
  const small = boundedFetch(1024, new Map(), sse('data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n'))
  t.match(await (await small('http://127.0.0.1:1/mcp', { method: 'GET' })).text(), /notifications\/message/)
})
