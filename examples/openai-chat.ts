/**
 * An agent loop with the OpenAI SDK (Chat Completions) and toolgate. The
 * completion goes to toolgate as the SDK returned it; toolgate's `messages`
 * go back into the conversation as they come. No translation code.
 *
 *   TOOLGATE_URL=http://127.0.0.1:8080 OPENAI_API_KEY=sk-... node dist/examples/openai-chat.js "Paint the tile at 1,2 red"
 */
import OpenAI from 'openai'
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions'
import { Toolgate } from './toolgate-client.js'

export async function chatLoop (toolgate: Toolgate, openai: OpenAI, model: string, prompt: string): Promise<string | null> {
  const { runId } = await toolgate.createRun()
  const tools = await toolgate.tools(runId, 'openaiChat')
  const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: prompt }]
  for (;;) {
    const completion = await openai.chat.completions.create({ model, messages, tools })
    const message = completion.choices[0]!.message
    messages.push(message)
    if (message.tool_calls === undefined || message.tool_calls.length === 0) return message.content
    // The whole completion: toolgate takes the calls, their ids and the usage from it.
    const answer = await toolgate.batch(runId, { openaiChat: completion })
    messages.push(...answer.messages)
    if (!answer.continue) return null
  }
}

if (process.argv[1]?.endsWith('openai-chat.js') === true) {
  const toolgate = new Toolgate(process.env.TOOLGATE_URL ?? 'http://127.0.0.1:8080', process.env.TOOLGATE_API_KEY)
  console.log(await chatLoop(toolgate, new OpenAI(), process.env.OPENAI_MODEL ?? 'gpt-4.1-mini', process.argv[2] ?? 'Look at the tile at 1,2.'))
}
