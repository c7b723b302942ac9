/**
 * Provider objects as the official SDKs return them (fields as the APIs
 * document them, a few unknown ones included), each holding the same turn:
 * a `look` at (1, 2) and a `poke` at x = 3, in that order.
 */
export const chatCompletion = (finish = 'tool_calls', args = ['{"x":1,"y":2}', '{"x":3}']): Record<string, unknown> => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1764000000,
  model: 'gpt-test',
  choices: [{
    index: 0,
    message: {
      role: 'assistant',
      content: null,
      refusal: null,
      annotations: [],
      tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'look', arguments: args[0] } },
        { id: 'call_b', type: 'function', function: { name: 'poke', arguments: args[1] } }
      ]
    },
    logprobs: null,
    finish_reason: finish
  }],
  usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, prompt_tokens_details: { cached_tokens: 0 } },
  system_fingerprint: 'fp_1'
})

export const responsesResponse = (status = 'completed'): Record<string, unknown> => ({
  id: 'resp_1',
  object: 'response',
  created_at: 1764000000,
  status,
  model: 'gpt-test',
  output: [
    { id: 'rs_1', type: 'reasoning', summary: [] },
    { id: 'fc_1', type: 'function_call', call_id: 'call_a', name: 'look', arguments: '{"x":1,"y":2}', status: 'completed' },
    { id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Looking.', annotations: [] }] },
    { id: 'fc_2', type: 'function_call', call_id: 'call_b', name: 'poke', arguments: '{"x":3}', status: 'completed' }
  ],
  usage: { input_tokens: 100, output_tokens: 20, total_tokens: 120, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
  ...(status === 'incomplete' ? { incomplete_details: { reason: 'max_output_tokens' } } : {})
})

export const anthropicMessage = (stop = 'tool_use'): Record<string, unknown> => ({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-test',
  content: [
    { type: 'text', text: 'Let me look.' },
    { type: 'tool_use', id: 'toolu_a', name: 'look', input: { x: 1, y: 2 } },
    { type: 'tool_use', id: 'toolu_b', name: 'poke', input: { x: 3 } }
  ],
  stop_reason: stop,
  stop_sequence: null,
  usage: { input_tokens: 100, output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }
})

export const geminiResponse = (finish = 'STOP', ids = false): Record<string, unknown> => ({
  candidates: [{
    content: {
      role: 'model',
      parts: [
        { text: 'Looking.' },
        { functionCall: { ...(ids ? { id: 'fc_a' } : {}), name: 'look', args: { x: 1, y: 2 } } },
        { functionCall: { ...(ids ? { id: 'fc_b' } : {}), name: 'poke', args: { x: 3 } }, thoughtSignature: 'c2ln' }
      ]
    },
    finishReason: finish,
    index: 0
  }],
  usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 20, totalTokenCount: 120 },
  modelVersion: 'gemini-test',
  responseId: 'r1'
})
