/**
 * An agent loop with the Google Gen AI SDK (Gemini) and toolgate: the
 * generateContent response goes to toolgate as it came, toolgate's
 * `messages` (one user Content of functionResponse parts) are appended to
 * the contents as they come.
 *
 *   TOOLGATE_URL=http://127.0.0.1:8080 GEMINI_API_KEY=... node dist/examples/gemini.js "Paint the tile at 1,2 red"
 */
import { type Content, GoogleGenAI } from '@google/genai'
import { Toolgate } from './toolgate-client.js'

export async function geminiLoop (toolgate: Toolgate, ai: GoogleGenAI, model: string, prompt: string): Promise<string | null> {
  const { runId } = await toolgate.createRun()
  const tools = await toolgate.tools(runId, 'gemini')
  const contents: Content[] = [{ role: 'user', parts: [{ text: prompt }] }]
  for (;;) {
    const response = await ai.models.generateContent({ model, contents, config: { tools } })
    const content = response.candidates?.[0]?.content
    if (content === undefined) return null
    contents.push(content)
    if (response.functionCalls === undefined || response.functionCalls.length === 0) return response.text ?? null
    const answer = await toolgate.batch(runId, { gemini: response })
    contents.push(...answer.messages)
    if (!answer.continue) return null
  }
}

if (process.argv[1]?.endsWith('gemini.js') === true) {
  const toolgate = new Toolgate(process.env.TOOLGATE_URL ?? 'http://127.0.0.1:8080', process.env.TOOLGATE_API_KEY)
  console.log(await geminiLoop(toolgate, new GoogleGenAI({}), process.env.GEMINI_MODEL ?? 'gemini-2.5-flash', process.argv[2] ?? 'Look at the tile at 1,2.'))
}
