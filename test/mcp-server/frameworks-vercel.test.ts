/**
 * The Vercel AI SDK's MCP client (`@ai-sdk/mcp` createMCPClient, Streamable
 * HTTP) driving toolgate's MCP endpoint in full `generateText` agent loops
 * with a scripted model (`ai/test` MockLanguageModelV3): a parallel turn
 * whose same-key writes never overlap, a loop toolgate stops, and an
 * approval asked of the client's user by elicitation.
 */
import t, { type Test } from 'tap'
import { createMCPClient, ElicitationRequestSchema, type MCPClient } from '@ai-sdk/mcp'
import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import type { LanguageModelV3CallOptions, LanguageModelV3Content, LanguageModelV3GenerateResult } from '@ai-sdk/provider'
import { AUTH, STOPPED, runState, runWithOptions, sameKeyOverlaps, startToolgate } from './frameworks.js'

const tg = await startToolgate(t)

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined }
}

/** A model that answers each step from a script, given what it was sent (the tool results so far). */
function scripted (step: (n: number, prompt: string) => LanguageModelV3Content[]): MockLanguageModelV3 {
  let n = 0
  return new MockLanguageModelV3({
    doGenerate: async (options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> => {
      const content = step(n++, JSON.stringify(options.prompt))
      const calls = content.some((c) => c.type === 'tool-call')
      return { content, finishReason: { unified: calls ? 'tool-calls' : 'stop', raw: undefined }, usage: USAGE, warnings: [] }
    }
  })
}

const call = (toolCallId: string, toolName: string, input: unknown): LanguageModelV3Content => ({ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) })
const text = (s: string): LanguageModelV3Content => ({ type: 'text', text: s })

async function connect (t: Test, url: string, elicitation = false): Promise<MCPClient> {
  const client = await createMCPClient({
    transport: { type: 'http', url, headers: AUTH },
    ...(elicitation ? { capabilities: { elicitation: {} } } : {})
  })
  t.teardown(() => client.close())
  return client
}

t.test('a parallel turn: the SDK sends its calls at once, and same-key writes never overlap', async (t) => {
  const { runId, url } = await runWithOptions(tg)
  const client = await connect(t, url)
  const before = tg.executor.calls.length
  const result = await generateText({
    model: scripted((n) => n === 0
      ? [call('c1', 'build', { x: 1 }), call('c2', 'build', { x: 1 }), call('c3', 'build', { x: 2 }), call('c4', 'look', { x: 1 })]
      : [text('built')]),
    tools: await client.tools(),
    prompt: 'Build on tile 1 twice and on tile 2, and look at tile 1.',
    stopWhen: stepCountIs(5)
  })
  t.equal(result.text, 'built')
  const calls = tg.executor.calls.slice(before)
  t.equal(calls.length, 4, 'every call of the turn ran')
  t.ok(calls.every((c) => c.runId === runId), 'in the bound run')
  t.equal(sameKeyOverlaps(calls, 'build', 'x'), 0, 'no two writes to tile 1 overlapped at the executor')
  const results = result.steps[0]!.toolResults
  t.equal(results.length, 4)
  for (const r of results) t.equal((r.output as { _meta: Record<string, string> })._meta['toolgate/status'], 'ok', `${r.toolName} ran`)
})

t.test('a loop: the model repeats the same call, toolgate stops the run and the model reads why', async (t) => {
  const { runId, url } = await runWithOptions(tg, { limits: { exactToolRepeatAdvisoryThreshold: 2, exactToolRepeatTerminationThreshold: 3 } })
  const client = await connect(t, url)
  let stoppedAt = -1
  const result = await generateText({
    model: scripted((n, prompt) => {
      if (STOPPED.test(prompt)) {
        stoppedAt = n
        return [text('toolgate stopped me')]
      }
      return [call(`c${n}`, 'look', { x: 7 })]
    }),
    tools: await client.tools(),
    prompt: 'Look at tile 7 until it changes.',
    stopWhen: stepCountIs(20)
  })
  t.equal(result.text, 'toolgate stopped me')
  t.equal(stoppedAt, 3, 'the third identical call was stopped')
  const last = result.steps.at(-2)!.toolResults[0]!.output as { isError: boolean, _meta: Record<string, string> }
  t.equal(last.isError, true)
  t.equal(last._meta['toolgate/status'], 'terminated')
  t.match(await runState(tg, runId), { state: 'terminated', terminationReason: 'exact_repeat' })
})

t.test('an approval by elicitation: the client\'s user is asked, and the call runs once approved', async (t) => {
  const { runId, url } = await runWithOptions(tg)
  const client = await connect(t, url, true)
  const asked: string[] = []
  client.onElicitationRequest(ElicitationRequestSchema, async (request) => {
    asked.push(request.params.message)
    return { action: 'accept', content: { approve: true } }
  })
  const before = tg.executor.calls.length
  const result = await generateText({
    model: scripted((n) => n === 0 ? [call('c1', 'ship', { k: 'order-9' })] : [text('shipped')]),
    tools: await client.tools(),
    prompt: 'Ship order 9.',
    stopWhen: stepCountIs(5)
  })
  t.equal(result.text, 'shipped')
  t.equal(asked.length, 1, 'the user was asked once')
  t.match(asked[0], /ship/)
  const output = result.steps[0]!.toolResults[0]!.output as { isError: boolean, _meta: Record<string, string> }
  t.equal(output.isError, false)
  t.equal(output._meta['toolgate/status'], 'ok')
  const shipped = tg.executor.calls.slice(before)
  t.same(shipped.map((c) => [c.tool, c.runId]), [['ship', runId]], 'the approved call ran, once')
})
