import t from 'tap'
import { readSseAnswer } from '../../src/mcp/sliced-sse.js'

/** A stream of the given chunks (as UTF-8), ending after the last one unless `open`; `cancelled` tells whether it was cancelled. */
function stream (chunks: string[], open = false): { body: ReadableStream<Uint8Array>, cancelled: () => boolean } {
  let cancelled = false
  const encoder = new TextEncoder()
  const body = new ReadableStream<Uint8Array>({
    start (controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk))
      if (!open) controller.close()
    },
    cancel () { cancelled = true }
  })
  return { body, cancelled: () => cancelled }
}

const parse = async (text: string): Promise<unknown> => JSON.parse(text)

t.test('the messages up to the response, in order, whatever the line endings and however the chunks cut them', async (t) => {
  const note = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'listing' } }
  const answer = { jsonrpc: '2.0', id: 7, result: { tools: [{ name: 'a' }] } }
  const text = `: a comment\r\nid: 1\r\n\r\nevent: message\rdata: ${JSON.stringify(note)}\r\rdata: {"jsonrpc":"2.0",\ndata:"id":7,"result":{"tools":[{"name":"a"}]}}\n\nevent: other\ndata: {"not":"read"}\n\n`
  // Every cut, CR LF split across chunks included.
  for (let cut = 1; cut < text.length; cut += 3) {
    const { body } = stream([text.slice(0, cut), text.slice(cut)])
    t.same(await readSseAnswer(body, 7, parse), { messages: [note, answer] }, `cut at ${cut}`)
  }
})

t.test('the rest of the stream is not read once the response came', async (t) => {
  const { body, cancelled } = stream(['data: {"jsonrpc":"2.0","id":"x","result":{}}\n\n', 'data: {"never":'], true)
  t.same(await readSseAnswer(body, 'x', parse), { messages: [{ jsonrpc: '2.0', id: 'x', result: {} }] })
  t.ok(cancelled())
})

t.test('a response to another request, or an error, is told apart by its id', async (t) => {
  const { body } = stream(['data: {"jsonrpc":"2.0","id":1,"result":{}}\n\ndata: {"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}\n\n'])
  t.same(await readSseAnswer(body, 2, parse), { messages: [{ jsonrpc: '2.0', id: 1, result: {} }, { jsonrpc: '2.0', id: 2, error: { code: -1, message: 'no' } }] })
})

t.test('a stream that ends before the response is handed back as SSE, ids and retry kept, for the SDK to resume', async (t) => {
  const { body } = stream(['id: e1\nretry: 500\ndata: \n\n', 'event: message\nid: e2\ndata: {"jsonrpc":"2.0",\ndata: "method":"x"}\n\nevent: other\ndata: 1\n\n'])
  t.same(await readSseAnswer(body, 1, parse), { sse: 'retry: 500\n\nid: e1\ndata: \n\nid: e2\ndata: {"jsonrpc":"2.0",\ndata: "method":"x"}\n\n' })
})

t.test('a stream that fails, or an event that is not JSON, rejects', async (t) => {
  const failing = new ReadableStream<Uint8Array>({ pull (controller) { controller.error(new Error('too long')) } })
  await t.rejects(readSseAnswer(failing, 1, parse), /too long/)
  await t.rejects(readSseAnswer(stream(['data: {"jsonrpc":\n\n']).body, 1, parse), SyntaxError)
})
