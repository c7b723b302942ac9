/**
 * The four example orchestrator loops (examples/), each with its provider's
 * official SDK pointed at a scripted model server, against a listening
 * toolgate and a real executor. Each loop hands toolgate the SDK's response
 * object unchanged and appends `messages` unchanged; the model server refuses
 * any request the real API would refuse for its tool use. The script: a
 * response cut short with a half-written last call, then three complete
 * calls (a read, a write, an unknown tool), then the final text.
 */
import Anthropic from '@anthropic-ai/sdk'
import { GoogleGenAI } from '@google/genai'
import OpenAI from 'openai'
import t, { type Test } from 'tap'
import { anthropicLoop } from '../../examples/anthropic.js'
import { geminiLoop } from '../../examples/gemini.js'
import { chatLoop } from '../../examples/openai-chat.js'
import { responsesLoop } from '../../examples/openai-responses.js'
import { Toolgate } from '../../examples/toolgate-client.js'
import { buildTestApp, startExecutor, tool, type TestExecutor } from '../helper.js'
import { checkAnthropic, checkChat, checkGemini, checkResponses, startModelServer } from './model-servers.js'

const CUT = '{"x": 2, "y": 3, "col'
const PAINT = { x: 2, y: 3, color: 'red' }

async function toolgateAndExecutor (t: Test): Promise<{ toolgate: Toolgate, ex: TestExecutor }> {
  const ex = await startExecutor(t)
  ex.on('look', (call) => ({ content: { tile: 'grass', at: [call.arguments.x, call.arguments.y] } }))
  ex.on('paint', (call) => ({ content: { painted: call.arguments.color } }))
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('paint', ex.url)] })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  return { toolgate: new Toolgate(url), ex }
}

/** What reached the executor: only the complete turn's read and write, never the cut-short turn's calls. */
function executorSaw (ex: TestExecutor): unknown[] {
  return ex.calls.map((c) => [c.tool, c.arguments])
}
const EXPECTED_EXECUTOR = [['look', { x: 1, y: 2 }], ['paint', PAINT]]

t.test('OpenAI Chat Completions: the SDK loop runs to its answer with every tool message valid for the API', async (t) => {
  const completion = (message: object, finish: string): object => ({
    id: 'chatcmpl-x', object: 'chat.completion', created: 1764000000, model: 'gpt-test', choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: null, ...message }, logprobs: null, finish_reason: finish }], usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 }
  })
  const fn = (id: string, name: string, args: string): object => ({ id, type: 'function', function: { name, arguments: args } })
  const script = [
    completion({ tool_calls: [fn('cut_1', 'look', '{"x":1,"y":2}'), fn('cut_2', 'paint', CUT)] }, 'length'),
    completion({ tool_calls: [fn('call_1', 'look', '{"x":1,"y":2}'), fn('call_2', 'paint', JSON.stringify(PAINT)), fn('call_3', 'fly', '{}')] }, 'tool_calls'),
    completion({ content: 'Done.' }, 'stop')
  ]
  const model = await startModelServer(t, checkChat, script, new Set(['cut_1', 'cut_2', 'call_3']))
  const { toolgate, ex } = await toolgateAndExecutor(t)
  const answer = await chatLoop(toolgate, new OpenAI({ apiKey: 'test', baseURL: `${model.origin}/v1`, maxRetries: 0 }), 'gpt-test', 'Paint 2,3 red.')
  t.equal(answer, 'Done.')
  t.strictSame(model.violations, [])
  t.equal(model.requests.length, 3)
  t.strictSame(model.requests[0].tools.map((x: any) => x.function.name), ['look', 'paint'], 'the tools came from toolgate in the Chat shape')
  t.strictSame(model.requests[2].messages.map((m: any) => m.role), ['user', 'assistant', 'tool', 'tool', 'assistant', 'tool', 'tool', 'tool'])
  t.strictSame(executorSaw(ex), EXPECTED_EXECUTOR)
})

t.test('OpenAI Responses: the SDK loop runs to its answer with every function call output valid for the API', async (t) => {
  const response = (output: object[], status = 'completed'): object => ({
    id: 'resp_x', object: 'response', created_at: 1764000000, model: 'gpt-test', status, output, usage: { input_tokens: 50, output_tokens: 10, total_tokens: 60 }, ...(status === 'incomplete' ? { incomplete_details: { reason: 'max_output_tokens' } } : {})
  })
  const fc = (id: string, name: string, args: string, status = 'completed'): object => ({ id: `fc_${id}`, type: 'function_call', call_id: id, name, arguments: args, status })
  const script = [
    response([fc('cut_1', 'look', '{"x":1,"y":2}'), fc('cut_2', 'paint', CUT, 'incomplete')], 'incomplete'),
    response([{ id: 'rs_1', type: 'reasoning', summary: [] }, fc('call_1', 'look', '{"x":1,"y":2}'), fc('call_2', 'paint', JSON.stringify(PAINT)), fc('call_3', 'fly', '{}')]),
    response([{ id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Done.', annotations: [] }] }])
  ]
  const model = await startModelServer(t, checkResponses, script, new Set(['cut_1', 'cut_2', 'call_3']))
  const { toolgate, ex } = await toolgateAndExecutor(t)
  const answer = await responsesLoop(toolgate, new OpenAI({ apiKey: 'test', baseURL: `${model.origin}/v1`, maxRetries: 0 }), 'gpt-test', 'Paint 2,3 red.')
  t.equal(answer, 'Done.')
  t.strictSame(model.violations, [])
  t.equal(model.requests.length, 3)
  t.strictSame(model.requests[0].tools.map((x: any) => [x.type, x.name]), [['function', 'look'], ['function', 'paint']])
  t.strictSame(model.requests[2].input.map((i: any) => i.type ?? i.role), ['user', 'function_call', 'function_call', 'function_call_output', 'function_call_output', 'reasoning', 'function_call', 'function_call', 'function_call', 'function_call_output', 'function_call_output', 'function_call_output'])
  t.strictSame(executorSaw(ex), EXPECTED_EXECUTOR)
})

t.test('Anthropic Messages: the SDK loop runs to its answer with tool_result blocks valid for the API and is_error on errors', async (t) => {
  const message = (content: object[], stop: string): object => ({
    id: 'msg_x', type: 'message', role: 'assistant', model: 'claude-test', content, stop_reason: stop, stop_sequence: null, usage: { input_tokens: 50, output_tokens: 10 }
  })
  const use = (id: string, name: string, input: object): object => ({ type: 'tool_use', id, name, input })
  const script = [
    message([{ type: 'text', text: 'Painting.' }, use('cut_1', 'look', { x: 1, y: 2 }), use('cut_2', 'paint', { x: 2, y: 3 })], 'max_tokens'),
    message([use('call_1', 'look', { x: 1, y: 2 }), use('call_2', 'paint', PAINT), use('call_3', 'fly', {})], 'tool_use'),
    message([{ type: 'text', text: 'Done.' }], 'end_turn')
  ]
  const model = await startModelServer(t, checkAnthropic, script, new Set(['cut_1', 'cut_2', 'call_3']))
  const { toolgate, ex } = await toolgateAndExecutor(t)
  const answer = await anthropicLoop(toolgate, new Anthropic({ apiKey: 'test', baseURL: model.origin, maxRetries: 0 }), 'claude-test', 'Paint 2,3 red.')
  t.equal(answer, 'Done.')
  t.strictSame(model.violations, [])
  t.equal(model.requests.length, 3)
  t.strictSame(model.requests[0].tools.map((x: any) => Object.keys(x)), [['name', 'description', 'input_schema'], ['name', 'description', 'input_schema']])
  t.strictSame(model.requests[2].messages.map((m: any) => m.role), ['user', 'assistant', 'user', 'assistant', 'user'])
  t.strictSame(executorSaw(ex), EXPECTED_EXECUTOR)
})

t.test('Gemini: the SDK loop runs to its answer with function responses valid for the API, ids echoed only when the model sent them', async (t) => {
  const response = (parts: object[], finishReason: string): object => ({
    candidates: [{ content: { role: 'model', parts }, finishReason, index: 0 }], usageMetadata: { promptTokenCount: 50, candidatesTokenCount: 10, totalTokenCount: 60 }, modelVersion: 'gemini-test', responseId: 'r'
  })
  const call = (name: string, args: object, id?: string): object => ({ functionCall: { ...(id === undefined ? {} : { id }), name, args } })
  const script = [
    response([call('look', { x: 1, y: 2 }), call('paint', { x: 2, y: 3 })], 'MAX_TOKENS'),
    response([{ text: 'Painting.' }, call('look', { x: 1, y: 2 }, 'fc_1'), call('paint', PAINT, 'fc_2'), { ...call('fly', {}, 'fc_3'), thoughtSignature: 'c2ln' }], 'STOP'),
    response([{ text: 'Done.' }], 'STOP')
  ]
  // The calls without ids are known by their place: contents[1], parts 0 and 1.
  const model = await startModelServer(t, checkGemini, script, new Set(['1/0', '1/1', 'fc_3']))
  const { toolgate, ex } = await toolgateAndExecutor(t)
  const answer = await geminiLoop(toolgate, new GoogleGenAI({ apiKey: 'test', httpOptions: { baseUrl: model.origin } }), 'gemini-test', 'Paint 2,3 red.')
  t.equal(answer, 'Done.')
  t.strictSame(model.violations, [])
  t.equal(model.requests.length, 3)
  t.strictSame(model.requests[0].tools[0].functionDeclarations.map((d: any) => [d.name, typeof d.parametersJsonSchema]), [['look', 'object'], ['paint', 'object']])
  t.strictSame(model.requests[2].contents.map((c: any) => c.role), ['user', 'model', 'user', 'model', 'user'])
  t.equal(model.requests[2].contents[3].parts[3].thoughtSignature, 'c2ln', 'the model turn went back as it came')
  t.strictSame(executorSaw(ex), EXPECTED_EXECUTOR)
})

t.test('a turn held for approval: the loop waits for the decision and resumes with the completed answer\'s messages', async (t) => {
  const completion = (message: object, finish: string): object => ({
    id: 'chatcmpl-a', object: 'chat.completion', created: 1764000000, model: 'gpt-test', choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: null, ...message }, logprobs: null, finish_reason: finish }], usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 }
  })
  const fn = (id: string, name: string, args: string): object => ({ id, type: 'function', function: { name, arguments: args } })
  const script = [
    completion({ tool_calls: [fn('call_1', 'look', '{"x":1,"y":2}'), fn('call_2', 'paint', JSON.stringify(PAINT))] }, 'tool_calls'),
    completion({ content: 'Done.' }, 'stop')
  ]
  const model = await startModelServer(t, checkChat, script, new Set())
  const ex = await startExecutor(t)
  ex.on('look', (call) => ({ content: { tile: 'grass', at: [call.arguments.x, call.arguments.y] } }))
  ex.on('paint', (call) => ({ content: { painted: call.arguments.color } }))
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('paint', ex.url, { requiresApproval: true })] })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const waited: unknown[] = []
  const toolgate = new Toolgate(url, {
    pollMs: 5,
    onWaiting: async (w) => {
      waited.push(w.approvals?.map((a) => [a.callId, a.tool, a.arguments]))
      t.equal(ex.calls.length, 0, 'nothing ran while the turn waited, not even the read')
      const res = await fetch(`${url}/v1/runs/${w.runId}/batches/${w.batchId}/approvals`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ decisions: [{ callId: 'call_2', approve: true, arguments: { ...PAINT, color: 'blue' } }] })
      })
      t.equal(res.status, 200)
    }
  })
  const answer = await chatLoop(toolgate, new OpenAI({ apiKey: 'test', baseURL: `${model.origin}/v1`, maxRetries: 0 }), 'gpt-test', 'Paint 2,3 red.')
  t.equal(answer, 'Done.')
  t.strictSame(waited, [[['call_2', 'paint', PAINT]]], 'told once, with the held call')
  t.strictSame(model.violations, [])
  t.strictSame(model.requests[1].messages.map((m: any) => m.role), ['user', 'assistant', 'tool', 'tool'], 'both tool results reached the model')
  t.strictSame(executorSaw(ex), [['look', { x: 1, y: 2 }], ['paint', { ...PAINT, color: 'blue' }]], 'the approved edit ran')
})
