/** Provider bodies through POST /v1/runs/{runId}/batches and tool lists by format (SPEC section 11), black-box. */
import t from 'tap'
import { buildTestApp, get, post, startExecutor, tool } from '../helper.js'
import { collect, responseOf, ssePost } from '../schedule/harness.js'
import { anthropicMessage, chatCompletion, geminiResponse, responsesResponse } from './fixtures.js'

const ex = await startExecutor(t)
const { app, logs } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('poke', ex.url), tool('hidden', ex.url, { requiredScopes: ['never'] })] })
ex.on('look', (call) => ({ content: { tile: 'grass', at: [call.arguments.x, call.arguments.y] } }))
ex.on('poke', () => ({ content: 'poked', isError: true }))

let n = 0
async function newRun (options: Record<string, unknown> = {}): Promise<string> {
  const runId = `fmt-${++n}`
  const res = await post(app, '/v1/runs', { runId, ...options })
  if (res.status !== 201) throw new Error(JSON.stringify(res.body))
  return runId
}
const batches = (runId: string): string => `/v1/runs/${runId}/batches`
const seen = (runId: string): unknown[] => ex.calls.filter((c) => c.runId === runId).map((c) => [c.callId, c.tool, c.arguments])

t.test('each format runs its calls with the provider\'s ids and arguments and answers messages to append', async (t) => {
  const cases: Array<[string, unknown, string[], unknown]> = [
    ['openaiChat', chatCompletion(), ['call_a', 'call_b'], [
      { role: 'tool', tool_call_id: 'call_a', content: '{"tile":"grass","at":[1,2]}' },
      { role: 'tool', tool_call_id: 'call_b', content: 'poked' }
    ]],
    ['openaiResponses', responsesResponse(), ['call_a', 'call_b'], [
      { type: 'function_call_output', call_id: 'call_a', output: '{"tile":"grass","at":[1,2]}' },
      { type: 'function_call_output', call_id: 'call_b', output: 'poked' }
    ]],
    ['anthropic', anthropicMessage(), ['toolu_a', 'toolu_b'], [{
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_a', content: '{"tile":"grass","at":[1,2]}' },
        { type: 'tool_result', tool_use_id: 'toolu_b', content: 'poked', is_error: true }
      ]
    }]],
    ['gemini', geminiResponse(), ['gemini_0', 'gemini_1'], [{
      role: 'user',
      parts: [
        { functionResponse: { name: 'look', response: { output: { tile: 'grass', at: [1, 2] } } } },
        { functionResponse: { name: 'poke', response: { error: 'poked' } } }
      ]
    }]]
  ]
  for (const [format, body, ids, messages] of cases) {
    const runId = await newRun()
    const res = await post(app, batches(runId), { [format]: body })
    t.equal(res.status, 200, format)
    t.strictSame(res.body.results.map((r: any) => [r.callId, r.name, r.status]), [[ids[0], 'look', 'ok'], [ids[1], 'poke', 'error']], `${format}: results in source order`)
    t.strictSame(seen(runId), [[ids[0], 'look', { x: 1, y: 2 }], [ids[1], 'poke', { x: 3 }]], `${format}: the executor got the provider's arguments`)
    t.strictSame(res.body.messages, messages, `${format}: messages`)
    t.equal((await get(app, `/v1/runs/${runId}`)).body.counters.totalTokens, 120, `${format}: the provider's usage counted`)
  }
})

t.test('a batch of plain calls has no messages', async (t) => {
  const res = await post(app, batches(await newRun()), { calls: [{ id: 'a', name: 'look', arguments: {} }] })
  t.equal(res.status, 200)
  t.notOk('messages' in res.body)
})

t.test('a truncated response whose last call has half-written arguments dispatches nothing; every call is rejected and the batch is a turn', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['openaiChat', chatCompletion('length', ['{"x":1,"y":2}', '{"x": 3, "y'])],
    ['openaiResponses', { ...responsesResponse('incomplete'), output: [(responsesResponse().output as unknown[])[1], { type: 'function_call', call_id: 'call_b', name: 'poke', arguments: '{"x": 3, "y', status: 'incomplete' }] }],
    ['anthropic', { ...anthropicMessage('max_tokens'), content: [{ type: 'tool_use', id: 'toolu_a', name: 'look', input: { x: 1, y: 2 } }, { type: 'tool_use', id: 'toolu_b', name: 'poke', input: {} }] }],
    ['gemini', geminiResponse('MAX_TOKENS')]
  ]
  for (const [format, body] of cases) {
    const runId = await newRun()
    const res = await post(app, batches(runId), { [format]: body })
    t.equal(res.status, 200, format)
    t.strictSame(res.body.results.map((r: any) => [r.status, r.isError, r.details.reason]), [['rejected', true, 'incomplete_response'], ['rejected', true, 'incomplete_response']], `${format}: every call rejected`)
    t.match(JSON.parse(res.body.results[1].content), { error: 'incomplete_response', message: /cut short.*not run/ }, `${format}: the model reads why`)
    t.strictSame(seen(runId), [], `${format}: nothing reached an executor`)
    t.equal(res.body.messages.length > 0, true, `${format}: the rejections are still answered as messages`)
    const run = (await get(app, `/v1/runs/${runId}`)).body
    t.equal(run.counters.turns, 1, `${format}: a turn`)
    t.equal(run.state, 'active')
  }
})

t.test('usage beside the provider object wins, and counts toward maxTotalTokens', async (t) => {
  const runId = await newRun({ limits: { maxTotalTokens: 129 } })
  const first = await post(app, batches(runId), { openaiChat: { ...chatCompletion(), usage: { prompt_tokens: 1000, completion_tokens: 1000 } }, usage: { inputTokens: 5, outputTokens: 5 } })
  t.equal(first.status, 200)
  t.equal((await get(app, `/v1/runs/${runId}`)).body.counters.totalTokens, 10)
  const second = await post(app, batches(runId), { anthropic: anthropicMessage() })
  t.equal(second.status, 409, 'the provider\'s own 120 tokens pass the limit')
  t.equal(second.body.terminationReason, 'max_total_tokens')
})

t.test('a body with none or several of calls and the provider fields is a 400', async (t) => {
  const runId = await newRun()
  for (const body of [{}, { calls: [], gemini: geminiResponse() }, { openaiChat: chatCompletion(), openaiResponses: responsesResponse() }]) {
    const res = await post(app, batches(runId), body)
    t.equal(res.status, 400)
    t.equal(res.body.code, 'invalid_request')
  }
  const empty = await app.inject({ method: 'POST', url: batches(runId), headers: { 'content-type': 'application/json' }, payload: '' })
  t.equal(empty.statusCode, 400, 'no body at all')
  t.equal((await get(app, `/v1/runs/${runId}`)).body.counters.turns, 0, 'nothing changed')
})

t.test('a provider object of the wrong shape is a 400 whose detail names the JSON path', async (t) => {
  const runId = await newRun()
  const chat = chatCompletion() as any
  chat.choices[0].message.tool_calls[1].function.name = 7
  const res = await post(app, batches(runId), { openaiChat: chat })
  t.equal(res.status, 400)
  t.equal(res.body.code, 'invalid_request')
  t.match(res.body.detail, '/openaiChat/choices/0/message/tool_calls/1/function/name')
  const gem = await post(app, batches(runId), { gemini: { candidates: [{ content: { role: 'model', parts: [{ functionCall: { args: {} } }] } }] } })
  t.equal(gem.status, 400)
  t.match(gem.body.detail, '/gemini/candidates/0/content/parts/0/functionCall')
  t.equal((await get(app, `/v1/runs/${runId}`)).body.counters.turns, 0)
})

t.test('duplicate call ids in a provider object are a 400 duplicate_call_id', async (t) => {
  const res = await post(app, batches(await newRun()), { anthropic: { role: 'assistant', content: [{ type: 'tool_use', id: 'x', name: 'look', input: {} }, { type: 'tool_use', id: 'x', name: 'look', input: {} }] } })
  t.equal(res.status, 400)
  t.equal(res.body.code, 'duplicate_call_id')
})

t.test('a provider body sent again replays byte for byte with its messages; another body under the same batchId is 422', async (t) => {
  const runId = await newRun()
  const body = { batchId: 'turn-1', openaiResponses: responsesResponse() }
  const first = await app.inject({ method: 'POST', url: batches(runId), payload: body })
  const again = await app.inject({ method: 'POST', url: batches(runId), payload: body })
  t.equal(again.statusCode, 200)
  t.equal(again.body, first.body, 'byte for byte')
  t.ok(JSON.parse(again.body).messages.length === 2)
  t.equal(seen(runId).length, 2, 'nothing dispatched twice')
  const reused: Array<[string, unknown]> = [
    ['other calls', { batchId: 'turn-1', openaiResponses: [(responsesResponse().output as unknown[])[1]] }],
    ['the same calls marked incomplete', { batchId: 'turn-1', openaiResponses: responsesResponse('incomplete') }],
    ['the same calls in plain form', { batchId: 'turn-1', calls: [{ id: 'call_a', name: 'look', arguments: '{"x":1,"y":2}' }, { id: 'call_b', name: 'poke', arguments: '{"x":3}' }] }],
    ['the same calls in the Chat format', { batchId: 'turn-1', openaiChat: chatCompletion() }]
  ]
  for (const [what, other] of reused) {
    const res = await post(app, batches(runId), other)
    t.equal(res.status, 422, what)
    t.equal(res.body.code, 'batch_id_reused', what)
  }
})

t.test('a streaming provider batch ends with batch.completed holding the messages', async (t) => {
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const runId = await newRun()
  const res = await ssePost(`${base}${batches(runId)}`, { batchId: 's1', anthropic: anthropicMessage() })
  const answer = responseOf(await collect(res.events))
  t.equal((answer as any).messages[0].content.length, 2)
  const stored = await app.inject({ method: 'POST', url: batches(runId), payload: { batchId: 's1', anthropic: anthropicMessage() } })
  t.strictSame(JSON.parse(stored.body), answer, 'the stored answer is what the stream ended with')
})

t.test('a response with no tool calls is a turn with no results and no messages', async (t) => {
  const runId = await newRun()
  const res = await post(app, batches(runId), { openaiChat: { role: 'assistant', content: 'All done.' } })
  t.equal(res.status, 200)
  t.strictSame([res.body.results, res.body.messages], [[], []])
  t.equal((await get(app, `/v1/runs/${runId}`)).body.counters.turns, 1)
})

t.test('an advisory policy message follows the tool results in the messages', async (t) => {
  const runId = await newRun({ limits: { exactToolRepeatAdvisoryThreshold: 2 } })
  const res = await post(app, batches(runId), { openaiChat: { role: 'assistant', tool_calls: [1, 2].map((i) => ({ id: `c${i}`, type: 'function', function: { name: 'look', arguments: '{"x":1}' } })) } })
  t.equal(res.body.policyMessages.length, 1)
  t.strictSame(res.body.messages.map((m: any) => m.role), ['tool', 'tool', 'system'])
  t.equal(res.body.messages[2].content, res.body.policyMessages[0].content)
})

t.test('GET /v1/runs/{runId}/tools?format= answers the run\'s tools in that provider\'s shape', async (t) => {
  const runId = await newRun({ tools: ['look', 'poke'] })
  const plain = await get(app, `/v1/runs/${runId}/tools`)
  t.strictSame(plain.body.tools.map((x: any) => x.name), ['look', 'poke'])
  const schema = plain.body.tools[0].inputSchema
  const shapes: Record<string, unknown> = {
    openaiChat: { type: 'function', function: { name: 'look', description: 'The look tool.', parameters: schema } },
    openaiResponses: { type: 'function', name: 'look', description: 'The look tool.', parameters: schema, strict: false },
    anthropic: { name: 'look', description: 'The look tool.', input_schema: schema }
  }
  for (const [format, first] of Object.entries(shapes)) {
    const res = await get(app, `/v1/runs/${runId}/tools?format=${format}`)
    t.equal(res.status, 200, format)
    t.equal(res.body.tools.length, 2, `${format}: the run's allow-list still applies`)
    t.strictSame(res.body.tools[0], first, format)
  }
  const gem = await get(app, `/v1/runs/${runId}/tools?format=gemini`)
  t.strictSame(gem.body.tools, [{ functionDeclarations: plain.body.tools.map((x: any) => ({ name: x.name, description: x.description, parametersJsonSchema: x.inputSchema })) }])
  const unknown = await get(app, `/v1/runs/${runId}/tools?format=mistral`)
  t.equal(unknown.status, 400)
  t.equal(unknown.body.code, 'invalid_request')
})

t.test('arguments and text in provider objects never reach the logs', async (t) => {
  const runId = await newRun()
  const canary = 'CANARY-7f3a9'
  const chat = chatCompletion('tool_calls', [`{"x":1,"k":"${canary}"}`, `{"x":3,"k":"${canary}"}`]) as any
  chat.choices[0].message.content = canary
  await post(app, batches(runId), { openaiChat: chat })
  await post(app, batches(runId), { gemini: { ...geminiResponse('MAX_TOKENS'), candidates: [{ content: { role: 'model', parts: [{ text: canary }, { functionCall: { name: 'look', args: { k: canary } } }] }, finishReason: 'MAX_TOKENS' }] } })
  t.equal(seen(runId).length, 2)
  t.notOk(logs.some((line) => line.includes(canary)), 'no log line holds the canary')
})

t.test('a Gemini call whose own id reads like a generated one keeps it in messages', async (t) => {
  const runId = await newRun()
  const res = await post(app, batches(runId), { gemini: { role: 'model', parts: [{ functionCall: { name: 'look', args: { x: 1, y: 2 } } }, { functionCall: { id: 'gemini_1', name: 'poke', args: { x: 3 } } }] } })
  t.equal(res.status, 200)
  t.strictSame(res.body.messages[0].parts.map((p: any) => p.functionResponse.id ?? null), [null, 'gemini_1'], 'an id only where the call had one, and the one it had')
})

t.test('a call of a kind toolgate does not run gets exactly one answer in messages: rejected, unsupported_call_type', async (t) => {
  const cases: Array<[string, unknown, unknown[]]> = [
    ['openaiChat', { role: 'assistant', tool_calls: [{ id: 'c1', type: 'custom', custom: { name: 'grep', input: 'secret-input-77' } }, { id: 'c2', type: 'function', function: { name: 'look', arguments: '{"x":1,"y":2}' } }] },
      [{ role: 'tool', tool_call_id: 'c1' }, { role: 'tool', tool_call_id: 'c2' }]],
    ['openaiResponses', [{ type: 'custom_tool_call', call_id: 'c1', name: 'grep', input: 'secret-input-77' }, { type: 'function_call', call_id: 'c2', name: 'look', arguments: '{"x":1,"y":2}' }],
      [{ type: 'custom_tool_call_output', call_id: 'c1' }, { type: 'function_call_output', call_id: 'c2' }]]
  ]
  for (const [format, body, messages] of cases) {
    const runId = await newRun()
    const res = await post(app, batches(runId), { [format]: body })
    t.equal(res.status, 200, format)
    t.strictSame(res.body.results.map((r: any) => [r.callId, r.status, r.details.reason ?? null]), [['c1', 'rejected', 'unsupported_call_type'], ['c2', 'ok', null]], `${format}: results`)
    t.match(JSON.parse(res.body.results[0].content), { error: 'unsupported_call_type', message: /not run|does not run/ }, `${format}: the model reads why`)
    t.match(res.body.messages, messages, `${format}: one answer per call, in order`)
    t.equal(res.body.messages.length, 2, `${format}: exactly one each`)
    t.strictSame(seen(runId), [['c2', 'look', { x: 1, y: 2 }]], `${format}: only the function call ran`)
  }
  t.notOk(logs.some((l) => l.includes('secret-input-77')), 'the custom input never reaches the logs')
})

t.test('a tool whose name the model APIs refuse is offered under a fitting, unique name, and a call under that name reaches it', async (t) => {
  const dotted = await startExecutor(t)
  dotted.on('fs.read', () => ({ content: 'read' }))
  dotted.on('fs_read', () => ({ content: 'plain' }))
  const { app } = await buildTestApp(t, { tools: [tool('fs.read', dotted.url, { readOnly: true }), tool('fs_read', dotted.url, { readOnly: true })] })
  await post(app, '/v1/runs', { runId: 'names' })
  for (const format of ['openaiChat', 'openaiResponses', 'anthropic', 'gemini']) {
    const list = (await get(app, `/v1/runs/names/tools?format=${format}`)).body.tools
    const names: string[] = format === 'gemini' ? list[0].functionDeclarations.map((d: any) => d.name) : list.map((d: any) => d.name ?? d.function.name)
    t.equal(names.length, 2, format)
    t.ok(names.every((n) => /^[A-Za-z0-9_-]{1,64}$/.test(n)), `${format}: every name fits`)
    t.equal(new Set(names).size, 2, `${format}: unique`)
    t.ok(names.includes('fs_read'), `${format}: a name that fits is kept`)
  }
  t.strictSame((await get(app, '/v1/runs/names/tools')).body.tools.map((d: any) => d.name).sort(), ['fs.read', 'fs_read'], 'without a format, the tools\' own names')
  const chatList = (await get(app, '/v1/runs/names/tools?format=openaiChat')).body.tools
  const mapped: string = chatList.map((d: any) => d.function.name).find((n: string) => n !== 'fs_read')
  const res = await post(app, '/v1/runs/names/batches', { openaiChat: { role: 'assistant', tool_calls: [{ id: 'c1', type: 'function', function: { name: mapped, arguments: '{}' } }, { id: 'c2', type: 'function', function: { name: 'fs_read', arguments: '{}' } }] } })
  t.equal(res.status, 200)
  t.strictSame(res.body.results.map((r: any) => [r.name, r.status, r.details.tool ?? null, r.content]), [[mapped, 'ok', 'fs.read', 'read'], ['fs_read', 'ok', null, 'plain']], 'each reached its own tool')
  t.strictSame(dotted.calls.map((c) => c.tool).sort(), ['fs.read', 'fs_read'])
})
