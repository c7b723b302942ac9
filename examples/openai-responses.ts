/**
 * An agent loop with the OpenAI SDK (Responses API) and toolgate: the
 * response goes to toolgate as it came, toolgate's `messages` (function call
 * outputs) go into the next request's input as they come.
 *
 *   TOOLGATE_URL=http://127.0.0.1:8080 OPENAI_API_KEY=sk-... node dist/examples/openai-responses.js "Paint the tile at 1,2 red"
 */
import OpenAI from 'openai'
import type { ResponseInputItem } from 'openai/resources/responses/responses'
import { Toolgate } from './toolgate-client.js'

export async function responsesLoop (toolgate: Toolgate, openai: OpenAI, model: string, prompt: string): Promise<string | null> {
  const { runId } = await toolgate.createRun()
  const tools = await toolgate.tools(runId, 'openaiResponses')
  const input: ResponseInputItem[] = [{ role: 'user', content: prompt }]
  for (;;) {
    const response = await openai.responses.create({ model, input, tools })
    input.push(...(response.output as ResponseInputItem[]))
    if (!response.output.some((item) => item.type === 'function_call')) return response.output_text
    const answer = await toolgate.batch(runId, { openaiResponses: response })
    input.push(...answer.messages)
    if (!answer.continue) return null
  }
}

if (process.argv[1]?.endsWith('openai-responses.js') === true) {
  const toolgate = new Toolgate(process.env.TOOLGATE_URL ?? 'http://127.0.0.1:8080', process.env.TOOLGATE_API_KEY)
  console.log(await responsesLoop(toolgate, new OpenAI(), process.env.OPENAI_MODEL ?? 'gpt-4.1-mini', process.argv[2] ?? 'Look at the tile at 1,2.'))
}
