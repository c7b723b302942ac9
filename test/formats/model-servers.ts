/**
 * Scripted model servers on 127.0.0.1, port 0, one per provider API: each
 * answers the official SDK with the next response of its script and first
 * checks that the request is one the real API would accept where tool use is
 * concerned: every tool call answered right after it, ids matching, results
 * in the calls' order, failures flagged as that provider flags them. A bad
 * request is answered 400, as the real API would, and recorded.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

type Tap = { teardown: (fn: () => unknown) => void }
type Json = any

export interface ModelServer {
  /** The server's origin, e.g. http://127.0.0.1:40123 */
  origin: string
  /** Every request body received, in order. */
  requests: Json[]
  /** What was wrong with each request that was refused. */
  violations: string[]
}

/** Checks one request body; throws with what is wrong. `failing` holds the ids of calls whose results must be errors. */
export type Check = (body: Json, failing: ReadonlySet<string>) => void

export async function startModelServer (t: Tap, check: Check, script: Json[], failing: ReadonlySet<string>): Promise<ModelServer> {
  const requests: Json[] = []
  const violations: string[] = []
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => { text += chunk })
    req.on('end', () => {
      const body = JSON.parse(text)
      requests.push(body)
      let status = 200
      let answer: Json
      try {
        check(body, failing)
        answer = script[requests.length - 1]
        if (answer === undefined) throw new Error(`the script has no response ${requests.length}`)
      } catch (err) {
        violations.push((err as Error).message)
        status = 400
        answer = { error: { type: 'invalid_request_error', message: (err as Error).message } }
      }
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${requests.length}` })
      res.end(JSON.stringify(answer))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, violations }
}

function expect (condition: boolean, what: string): void {
  if (!condition) throw new Error(what)
}

function isErrorContent (content: unknown): boolean {
  try {
    return typeof JSON.parse(String(content)).error === 'string'
  } catch {
    return false
  }
}

/** Chat Completions: an assistant message's tool_calls are followed at once by one tool message per call, in order. */
export const checkChat: Check = (body, failing) => {
  const messages: Json[] = body.messages
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    if (m.role === 'tool') throw new Error(`messages[${i}]: a tool message must answer the assistant message's tool_calls right before it`)
    if (m.role !== 'assistant' || m.tool_calls === undefined || m.tool_calls === null) continue
    for (const [k, call] of m.tool_calls.entries()) {
      const r = messages[i + 1 + k]
      expect(r?.role === 'tool', `messages[${i + 1 + k}] must be the tool message for ${call.id}`)
      expect(r.tool_call_id === call.id, `messages[${i + 1 + k}].tool_call_id is ${r.tool_call_id}, expected ${call.id} (source order)`)
      expect(typeof r.content === 'string', `messages[${i + 1 + k}].content must be a string`)
      expect(isErrorContent(r.content) === failing.has(call.id), `the result of ${call.id} ${failing.has(call.id) ? 'must' : 'must not'} be an error`)
    }
    i += m.tool_calls.length
  }
}

/** Responses: each function_call in the input has its function_call_output later, the outputs in the calls' order, none without a call. */
export const checkResponses: Check = (body, failing) => {
  const input: Json[] = typeof body.input === 'string' ? [] : body.input
  const calls = input.map((item, i) => [item, i] as const).filter(([item]) => item.type === 'function_call')
  const outputs = input.map((item, i) => [item, i] as const).filter(([item]) => item.type === 'function_call_output')
  expect(calls.length === outputs.length, `${calls.length} function calls but ${outputs.length} outputs`)
  for (const [k, [call, at]] of calls.entries()) {
    const [output, outAt] = outputs[k]!
    expect(output.call_id === call.call_id, `output ${k} answers ${output.call_id}, expected ${call.call_id} (source order)`)
    expect(outAt > at, `the output for ${call.call_id} comes before its call`)
    expect(typeof output.output === 'string', `the output for ${call.call_id} must be a string`)
    expect(isErrorContent(output.output) === failing.has(call.call_id), `the output of ${call.call_id} ${failing.has(call.call_id) ? 'must' : 'must not'} be an error`)
  }
}

/** Messages API: roles alternate; a tool_use turn is followed by a user message starting with its tool_results, in order, is_error on errors. */
export const checkAnthropic: Check = (body, failing) => {
  const messages: Json[] = body.messages
  for (const [i, m] of messages.entries()) {
    expect(m.role === (i % 2 === 0 ? 'user' : 'assistant'), `messages[${i}].role must be ${i % 2 === 0 ? 'user' : 'assistant'}`)
    const uses = Array.isArray(m.content) ? m.content.filter((b: Json) => b.type === 'tool_use') : []
    if (m.role === 'user' && Array.isArray(m.content) && i > 0) {
      const before = messages[i - 1].content.filter((b: Json) => b.type === 'tool_use').map((b: Json) => b.id)
      const results = m.content.filter((b: Json) => b.type === 'tool_result').map((b: Json) => b.tool_use_id)
      expect(JSON.stringify(results) === JSON.stringify(before), `messages[${i}] answers ${JSON.stringify(results)}, expected ${JSON.stringify(before)} in that order`)
      expect(m.content.slice(0, results.length).every((b: Json) => b.type === 'tool_result'), `messages[${i}]: tool_result blocks must come first`)
      for (const b of m.content) {
        if (b.type === 'tool_result') expect((b.is_error === true) === failing.has(b.tool_use_id), `${b.tool_use_id}: is_error ${failing.has(b.tool_use_id) ? 'must be true' : 'must not be set'}`)
        if (b.type === 'text') expect(typeof b.text === 'string' && b.text !== '', 'text blocks must not be empty')
      }
    }
    if (uses.length > 0) expect(i + 1 < messages.length, `messages[${i}] has tool_use blocks with no tool_result after them`)
  }
}

/** Gemini: contents alternate user/model; a model turn's function calls get one functionResponse each in the next user turn, same names, ids and order. */
export const checkGemini: Check = (body, failing) => {
  const contents: Json[] = body.contents
  for (const [i, c] of contents.entries()) {
    expect(c.role === (i % 2 === 0 ? 'user' : 'model'), `contents[${i}].role must be ${i % 2 === 0 ? 'user' : 'model'}`)
    const calls = c.parts.filter((p: Json) => p.functionCall !== undefined).map((p: Json) => p.functionCall)
    if (calls.length === 0) continue
    const next = contents[i + 1]
    expect(next !== undefined, `contents[${i}] has function calls with no responses after them`)
    const responses = next.parts.filter((p: Json) => p.functionResponse !== undefined).map((p: Json) => p.functionResponse)
    expect(responses.length === calls.length, `contents[${i + 1}] has ${responses.length} function responses for ${calls.length} calls`)
    for (const [k, call] of calls.entries()) {
      const r = responses[k]
      expect(r.name === call.name, `function response ${k} is for ${r.name}, expected ${call.name} (source order)`)
      expect(r.id === call.id, `function response ${k} has id ${r.id}, expected ${call.id}`)
      const id = call.id ?? `${i}/${k}`
      expect(typeof r.response === 'object' && r.response !== null, 'response must be an object')
      expect(('error' in r.response) === failing.has(id), `function response ${id} ${failing.has(id) ? 'must' : 'must not'} be an error`)
    }
  }
}
