/**
 * An agent loop with the Anthropic SDK (Messages API) and toolgate: the
 * message goes to toolgate as it came, toolgate's `messages` (one user
 * message of tool_result blocks, is_error set on errors) are appended as
 * they come.
 *
 *   TOOLGATE_URL=http://127.0.0.1:8080 ANTHROPIC_API_KEY=sk-ant-... node dist/examples/anthropic.js "Paint the tile at 1,2 red"
 */
import Anthropic from '@anthropic-ai/sdk'
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages'
import { Toolgate } from './toolgate-client.js'

export async function anthropicLoop (toolgate: Toolgate, anthropic: Anthropic, model: string, prompt: string): Promise<string | null> {
  const { runId } = await toolgate.createRun()
  const tools = await toolgate.tools(runId, 'anthropic')
  const messages: MessageParam[] = [{ role: 'user', content: prompt }]
  for (;;) {
    const message = await anthropic.messages.create({ model, max_tokens: 1024, messages, tools })
    messages.push({ role: 'assistant', content: message.content })
    if (!message.content.some((block) => block.type === 'tool_use')) {
      return message.content.map((block) => block.type === 'text' ? block.text : '').join('')
    }
    const answer = await toolgate.batch(runId, { anthropic: message })
    messages.push(...answer.messages)
    if (!answer.continue) return null
  }
}

if (process.argv[1]?.endsWith('anthropic.js') === true) {
  const toolgate = new Toolgate(process.env.TOOLGATE_URL ?? 'http://127.0.0.1:8080', process.env.TOOLGATE_API_KEY)
  console.log(await anthropicLoop(toolgate, new Anthropic(), process.env.ANTHROPIC_MODEL ?? 'claude-sonnet-4-5', process.argv[2] ?? 'Look at the tile at 1,2.'))
}
