/** Decoding provider objects into toolgate's calls, without HTTP (SPEC section 11, "In"). */
import t from 'tap'
import { ProblemError } from '../../src/errors.js'
import { decodeBatchBody, formatNamed } from '../../src/formats/index.js'
import { anthropicMessage, chatCompletion, geminiResponse, responsesResponse } from './fixtures.js'

const decode = (format: string, body: unknown): ReturnType<typeof decodeBatchBody> => decodeBatchBody({ [format]: body })

/** The pointer and detail of the 400 a body gets. */
function refusal (format: string, body: unknown): { code: string, pointer: unknown, detail: string } {
  try {
    decode(format, body)
  } catch (err) {
    if (err instanceof ProblemError) return { code: err.code, pointer: err.extra?.pointer, detail: err.message }
    throw err
  }
  throw new Error('decoded without a problem')
}

const LOOK_POKE_STRINGS = [{ id: 'call_a', name: 'look', arguments: '{"x":1,"y":2}' }, { id: 'call_b', name: 'poke', arguments: '{"x":3}' }]
const USAGE = { inputTokens: 100, outputTokens: 20 }

t.test('each format decodes the whole response and its short form into the same calls, ids and arguments as the provider sent them', async (t) => {
  const chat = chatCompletion()
  const responses = responsesResponse()
  const message = anthropicMessage()
  const gem = geminiResponse()
  const cases: Array<[string, unknown, unknown, { calls: unknown[], usage?: unknown }]> = [
    ['openaiChat', chat, (chat.choices as any)[0].message, { calls: LOOK_POKE_STRINGS, usage: USAGE }],
    ['openaiResponses', responses, responses.output, { calls: LOOK_POKE_STRINGS, usage: USAGE }],
    ['anthropic', message, { role: 'assistant', content: message.content }, {
      calls: [{ id: 'toolu_a', name: 'look', arguments: { x: 1, y: 2 } }, { id: 'toolu_b', name: 'poke', arguments: { x: 3 } }], usage: USAGE
    }],
    ['gemini', gem, (gem.candidates as any)[0].content, {
      calls: [{ id: 'gemini_0', name: 'look', arguments: { x: 1, y: 2 }, generatedId: true }, { id: 'gemini_1', name: 'poke', arguments: { x: 3 }, generatedId: true }], usage: USAGE
    }]
  ]
  for (const [format, whole, short, expected] of cases) {
    t.strictSame(decode(format, whole), { calls: expected.calls, format, incomplete: false, usage: expected.usage }, `${format}: whole response`)
    t.strictSame(decode(format, short), { calls: expected.calls, format, incomplete: false }, `${format}: short form (no usage in it)`)
  }
})

t.test('a Gemini function call with its own id keeps it, one that looks generated included; only a call without one is marked generated', async (t) => {
  t.strictSame(decode('gemini', geminiResponse('STOP', true)).calls.map((c) => c.id), ['fc_a', 'fc_b'])
  const own = decode('gemini', { role: 'model', parts: [{ functionCall: { id: 'gemini_0', name: 'look' } }, { functionCall: { name: 'poke' } }] }).calls
  t.strictSame(own.map((c) => [c.id, c.generatedId ?? false]), [['gemini_0', false], ['gemini_1', true]])
})

t.test('tool calls of other kinds are decoded marked with their kind (answered, never run); text, reasoning, refusals and server tools are ignored', async (t) => {
  const chat = { role: 'assistant', content: 'hi', tool_calls: [{ id: 'c1', type: 'custom', custom: { name: 'x', input: 'y' } }, { id: 'c2', type: 'function', function: { name: 'look', arguments: '{}' } }, { id: 'c3', type: 'later_kind' }] }
  t.strictSame(decode('openaiChat', chat).calls, [{ id: 'c1', name: 'x', arguments: 'y', kind: 'custom' }, { id: 'c2', name: 'look', arguments: '{}' }, { id: 'c3', name: 'later_kind', arguments: undefined, kind: 'later_kind' }])
  t.strictSame(decode('openaiResponses', [{ type: 'custom_tool_call', call_id: 'r1', name: 'x', input: 'y' }, { type: 'web_search_call', id: 'ws1' }]).calls, [{ id: 'r1', name: 'x', arguments: 'y', kind: 'custom' }])
  t.strictSame(decode('openaiResponses', [{ type: 'message', content: [{ type: 'refusal', refusal: 'no' }] }]).calls, [])
  t.strictSame(decode('anthropic', { role: 'assistant', content: [{ type: 'thinking', thinking: '…' }, { type: 'server_tool_use', id: 's1', name: 'web_search', input: {} }] }).calls, [])
  t.strictSame(decode('anthropic', { role: 'assistant', content: 'plain text' }).calls, [])
  t.strictSame(decode('gemini', { role: 'model', parts: [{ text: 'x' }, { thought: true, text: 'y' }] }).calls, [])
})

t.test('a response with no tool calls is a batch of no calls', async (t) => {
  t.strictSame(decode('openaiChat', { role: 'assistant', content: 'done', tool_calls: null }), { calls: [], format: 'openaiChat', incomplete: false })
  t.strictSame(decode('openaiResponses', []).calls, [])
  t.strictSame(decode('gemini', { candidates: [], promptFeedback: { blockReason: 'SAFETY' } }).calls, [])
})

t.test('what each provider marks as cut short or filtered is incomplete, and nothing else is', async (t) => {
  const cases: Array<[string, unknown, boolean]> = [
    ['openaiChat', chatCompletion('length'), true],
    ['openaiChat', chatCompletion('content_filter'), true],
    ['openaiChat', chatCompletion('tool_calls'), false],
    ['openaiChat', chatCompletion('stop'), false],
    ['openaiResponses', responsesResponse('incomplete'), true],
    ['openaiResponses', responsesResponse('completed'), false],
    ['openaiResponses', [{ type: 'function_call', call_id: 'c', name: 'look', arguments: '{"x":', status: 'incomplete' }], true],
    ['anthropic', anthropicMessage('max_tokens'), true],
    ['anthropic', anthropicMessage('refusal'), true],
    ['anthropic', anthropicMessage('model_context_window_exceeded'), true],
    ['anthropic', anthropicMessage('tool_use'), false],
    ['anthropic', anthropicMessage('end_turn'), false],
    ['gemini', geminiResponse('MAX_TOKENS'), true],
    ['gemini', geminiResponse('SAFETY'), true],
    ['gemini', geminiResponse('MALFORMED_FUNCTION_CALL'), true],
    ['gemini', geminiResponse('STOP'), false],
    ['gemini', { candidates: [{ content: { role: 'model', parts: [] } }] }, false]
  ]
  for (const [format, body, incomplete] of cases) {
    const reason = JSON.stringify((body as any).choices?.[0]?.finish_reason ?? (body as any).status ?? (body as any).stop_reason ?? (body as any).candidates?.[0]?.finishReason ?? (body as any)[0]?.status ?? 'absent')
    t.equal(decode(format, body).incomplete, incomplete, `${format} ${reason}`)
  }
})

t.test('usage beside the provider object wins over the provider\'s own', async (t) => {
  t.strictSame(decodeBatchBody({ openaiChat: chatCompletion(), usage: { inputTokens: 1 } }).usage, { inputTokens: 1 })
  t.strictSame(decodeBatchBody({ gemini: geminiResponse() }).usage, USAGE)
})

t.test('exactly one of calls or a provider field', async (t) => {
  for (const body of [{}, { calls: [], openaiChat: chatCompletion() }, { anthropic: anthropicMessage(), gemini: geminiResponse() }]) {
    t.throws(() => decodeBatchBody(body), { code: 'invalid_request', message: /exactly one of `calls`, `openaiChat`, `openaiResponses`, `anthropic`, `gemini`/ }, Object.keys(body).join('+') || 'none')
  }
  t.strictSame(decodeBatchBody({ calls: [] }), { calls: [], incomplete: false }, 'plain calls carry no format')
})

t.test('a provider object of the wrong shape is a 400 naming the JSON path', async (t) => {
  const chat = chatCompletion() as any
  chat.choices[0].message.tool_calls[1].function.name = 7
  const responses = responsesResponse() as any
  delete responses.output[3].call_id
  const message = anthropicMessage() as any
  message.content[2].input = '{"x":3}'
  const gem = geminiResponse() as any
  gem.candidates[0].content.parts[2].functionCall = { args: {} }
  const cases: Array<[string, unknown, string]> = [
    ['openaiChat', chat, '/openaiChat/choices/0/message/tool_calls/1/function/name'],
    ['openaiChat', { choices: [] }, '/openaiChat/choices'],
    ['openaiChat', { id: 'x' }, '/openaiChat'],
    ['openaiChat', { role: 'user', content: 'hi' }, '/openaiChat/role'],
    ['openaiChat', { ...chatCompletion(), usage: { prompt_tokens: -1 } }, '/openaiChat/usage/prompt_tokens'],
    ['openaiResponses', responses, '/openaiResponses/output/3/call_id'],
    ['openaiResponses', [{ type: 'function_call', call_id: 'c', name: 'look', arguments: {} }], '/openaiResponses/0/arguments'],
    ['openaiResponses', { id: 'resp' }, '/openaiResponses/output'],
    ['anthropic', message, '/anthropic/content/2/input'],
    ['anthropic', { role: 'assistant' }, '/anthropic/content'],
    ['gemini', gem, '/gemini/candidates/0/content/parts/2/functionCall/name'],
    ['gemini', {}, '/gemini'],
    ['gemini', { role: 'user', parts: [] }, '/gemini/role']
  ]
  for (const [format, body, pointer] of cases) {
    const problem = refusal(format, body)
    t.equal(problem.code, 'invalid_request', pointer)
    t.equal(problem.pointer, pointer, `pointer ${pointer}`)
    t.ok(problem.detail.startsWith(`body${pointer} `), `detail names ${pointer}: ${problem.detail}`)
  }
})

t.test('every format is found by its name and answers to it', async (t) => {
  for (const name of ['openaiChat', 'openaiResponses', 'anthropic', 'gemini']) t.equal(formatNamed(name)?.name, name)
  t.equal(formatNamed('mistral'), undefined)
})
