/** `messages` and tool lists in each provider's shape, without HTTP (SPEC section 11, "Out" and "Tool lists"). */
import t from 'tap'
import type { CallResult, PolicyMessage } from '../../src/model/result.js'
import { formatNamed, renderMessages } from '../../src/formats/index.js'

const ok = (callId: string, name: string, content: string): CallResult => ({ callId, name, status: 'ok', content, isError: false, details: {} })
const failed = (callId: string, name: string, content: string): CallResult => ({ callId, name, status: 'rejected', content, isError: true, details: { reason: 'unknown_tool' } })

const results = [ok('c1', 'look', '{"tile":"grass"}'), failed('c2', 'fly', '{"error":"unknown_tool"}'), ok('c3', 'say', 'plain text')]
const policy: PolicyMessage[] = [{ type: 'agent_policy', content: 'You called look 3 times in a row.' }]

t.test('openaiChat: one tool message per call in source order, then a system message per policy message', async (t) => {
  t.strictSame(renderMessages('openaiChat', results, policy), [
    { role: 'tool', tool_call_id: 'c1', content: '{"tile":"grass"}' },
    { role: 'tool', tool_call_id: 'c2', content: '{"error":"unknown_tool"}' },
    { role: 'tool', tool_call_id: 'c3', content: 'plain text' },
    { role: 'system', content: 'You called look 3 times in a row.' }
  ])
})

t.test('openaiResponses: one function_call_output per call, then a system message per policy message', async (t) => {
  t.strictSame(renderMessages('openaiResponses', results, policy), [
    { type: 'function_call_output', call_id: 'c1', output: '{"tile":"grass"}' },
    { type: 'function_call_output', call_id: 'c2', output: '{"error":"unknown_tool"}' },
    { type: 'function_call_output', call_id: 'c3', output: 'plain text' },
    { role: 'system', content: 'You called look 3 times in a row.' }
  ])
})

t.test('anthropic: one user message of tool_result blocks, is_error only when true, then text blocks', async (t) => {
  t.strictSame(renderMessages('anthropic', results, policy), [{
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'c1', content: '{"tile":"grass"}' },
      { type: 'tool_result', tool_use_id: 'c2', content: '{"error":"unknown_tool"}', is_error: true },
      { type: 'tool_result', tool_use_id: 'c3', content: 'plain text' },
      { type: 'text', text: 'You called look 3 times in a row.' }
    ]
  }])
})

t.test('gemini: one user Content of functionResponse parts, the content parsed when it is JSON, error for isError, id only when the call had one', async (t) => {
  const gem = [ok('gemini_0', 'look', '{"tile":"grass"}'), failed('fc_9', 'fly', '{"error":"unknown_tool"}'), ok('gemini_2', 'say', 'plain text'), ok('gemini_0', 'look', '42')]
  const calls = [{ id: 'gemini_0', name: 'look', generatedId: true as const }, { id: 'fc_9', name: 'fly' }, { id: 'gemini_2', name: 'say', generatedId: true as const }, { id: 'gemini_0', name: 'look' }]
  t.strictSame(renderMessages('gemini', gem, policy, calls), [{
    role: 'user',
    parts: [
      { functionResponse: { name: 'look', response: { output: { tile: 'grass' } } } },
      { functionResponse: { id: 'fc_9', name: 'fly', response: { error: { error: 'unknown_tool' } } } },
      { functionResponse: { name: 'say', response: { output: 'plain text' } } },
      // The model sent it (though it reads like a generated one), so it is echoed.
      { functionResponse: { id: 'gemini_0', name: 'look', response: { output: 42 } } },
      { text: 'You called look 3 times in a row.' }
    ]
  }])
})

t.test('with nothing to say, Anthropic and Gemini get no message (an empty one is refused) and the OpenAI formats an empty list', async (t) => {
  for (const f of ['openaiChat', 'openaiResponses', 'anthropic', 'gemini']) t.strictSame(renderMessages(f, [], []), [], f)
  t.strictSame(renderMessages('anthropic', [], policy), [{ role: 'user', content: [{ type: 'text', text: policy[0]!.content }] }])
})

t.test("tool lists come in each provider's tool-definition shape", async (t) => {
  const tools = [{ name: 'look', description: 'Look at a tile.', inputSchema: { type: 'object', properties: { x: { type: 'integer' } } } }]
  const schema = tools[0]!.inputSchema
  t.strictSame(formatNamed('openaiChat')!.toolList(tools), [{ type: 'function', function: { name: 'look', description: 'Look at a tile.', parameters: schema } }])
  t.strictSame(formatNamed('openaiResponses')!.toolList(tools), [{ type: 'function', name: 'look', description: 'Look at a tile.', parameters: schema, strict: false }])
  t.strictSame(formatNamed('anthropic')!.toolList(tools), [{ name: 'look', description: 'Look at a tile.', input_schema: schema }])
  t.strictSame(formatNamed('gemini')!.toolList(tools), [{ functionDeclarations: [{ name: 'look', description: 'Look at a tile.', parametersJsonSchema: schema }] }])
  t.strictSame(formatNamed('gemini')!.toolList([]), [], 'no tools: no empty declaration list')
})
