/** The scripted model servers' checks refuse what the real APIs refuse, so the SDK loops can fail. */
import t, { type Test } from 'tap'
import { checkAnthropic, checkChat, checkGemini, checkResponses, type Check } from './model-servers.js'

const failing = new Set(['b', '1/1'])
const err = '{"error":"unknown_tool","message":"no"}'

function table (t: Test, check: Check, valid: unknown, invalid: Record<string, unknown>): void {
  t.doesNotThrow(() => check(valid, failing), 'a valid request passes')
  for (const [what, body] of Object.entries(invalid)) t.throws(() => check(body, failing), what)
}

t.test('Chat: tool messages right after their call, ids and order matching, errors as errors', async (t) => {
  const assistant = { role: 'assistant', tool_calls: [{ id: 'a', type: 'function', function: { name: 'x', arguments: '{}' } }, { id: 'b', type: 'function', function: { name: 'y', arguments: '{}' } }] }
  const a = { role: 'tool', tool_call_id: 'a', content: 'ok' }
  const b = { role: 'tool', tool_call_id: 'b', content: err }
  table(t, checkChat, { messages: [{ role: 'user', content: 'hi' }, assistant, a, b, { role: 'system', content: 'note' }] }, {
    'out of order': { messages: [assistant, b, a] },
    'one missing': { messages: [assistant, a] },
    'a system message between': { messages: [assistant, a, { role: 'system', content: 'x' }, b] },
    'an error not shown as one': { messages: [assistant, a, { ...b, content: 'fine' }] },
    'a stray tool message': { messages: [{ role: 'user', content: 'hi' }, a] }
  })
})

t.test('Responses: each function call has its output after it, in order', async (t) => {
  const call = (id: string): object => ({ type: 'function_call', call_id: id, name: 'x', arguments: '{}' })
  const out = (id: string, output: string): object => ({ type: 'function_call_output', call_id: id, output })
  table(t, checkResponses, { input: [{ role: 'user', content: 'hi' }, call('a'), call('b'), out('a', 'ok'), out('b', err)] }, {
    'out of order': { input: [call('a'), call('b'), out('b', err), out('a', 'ok')] },
    'one missing': { input: [call('a'), call('b'), out('a', 'ok')] },
    'an output before its call': { input: [out('a', 'ok'), call('a'), call('b'), out('b', err)] },
    'an error not shown as one': { input: [call('a'), call('b'), out('a', 'ok'), out('b', 'fine')] }
  })
})

t.test('Anthropic: alternating roles, tool_results first and in order, is_error exactly on errors', async (t) => {
  const uses = { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'x', input: {} }, { type: 'tool_use', id: 'b', name: 'y', input: {} }] }
  const ra = { type: 'tool_result', tool_use_id: 'a', content: 'ok' }
  const rb = { type: 'tool_result', tool_use_id: 'b', content: err, is_error: true }
  const user = { role: 'user', content: 'hi' }
  table(t, checkAnthropic, { messages: [user, uses, { role: 'user', content: [ra, rb, { type: 'text', text: 'note' }] }] }, {
    'out of order': { messages: [user, uses, { role: 'user', content: [rb, ra] }] },
    'is_error missing': { messages: [user, uses, { role: 'user', content: [ra, { ...rb, is_error: undefined }] }] },
    'is_error on a success': { messages: [user, uses, { role: 'user', content: [{ ...ra, is_error: true }, rb] }] },
    'text before the results': { messages: [user, uses, { role: 'user', content: [{ type: 'text', text: 'x' }, ra, rb] }] },
    'two user messages in a row': { messages: [user, uses, { role: 'user', content: [ra, rb] }, { role: 'user', content: 'x' }] },
    'no results': { messages: [user, uses] }
  })
})

t.test('Gemini: alternating roles, one response per call with its name and id, errors as error', async (t) => {
  const model = { role: 'model', parts: [{ functionCall: { name: 'x', args: {} } }, { functionCall: { name: 'y', args: {} } }] }
  const rx = { functionResponse: { name: 'x', response: { output: 'ok' } } }
  const ry = { functionResponse: { name: 'y', response: { error: 'no' } } }
  const user = { role: 'user', parts: [{ text: 'hi' }] }
  table(t, checkGemini, { contents: [user, model, { role: 'user', parts: [rx, ry] }] }, {
    'out of order': { contents: [user, model, { role: 'user', parts: [ry, rx] }] },
    'one missing': { contents: [user, model, { role: 'user', parts: [rx] }] },
    'an id the call did not have': { contents: [user, model, { role: 'user', parts: [{ functionResponse: { ...rx.functionResponse, id: 'gemini_0' } }, ry] }] },
    'an error as output': { contents: [user, model, { role: 'user', parts: [rx, { functionResponse: { name: 'y', response: { output: 'no' } } }] }] },
    'no responses': { contents: [user, model] }
  })
})
