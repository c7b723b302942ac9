/**
 * The OpenAI Agents SDK (JS) `MCPServerStreamableHttp` driving toolgate's
 * MCP endpoint in full `run()` agent loops with a scripted model (the SDK's
 * `Model` interface): a parallel turn whose same-key writes never overlap,
 * a loop toolgate stops, and an approval. The SDK's MCP client declares no
 * `elicitation` capability, so the held call is decided in toolgate's
 * approvals inbox (API or page) while the agent's call waits.
 */
import t, { type Test } from 'tap'
import { Agent, MCPServerStreamableHttp, type Model, type ModelRequest, type ModelResponse, Usage, run, setTracingDisabled } from '@openai/agents'
import { AUTH, STOPPED, approveFromInbox, runState, runWithOptions, sameKeyOverlaps, startToolgate } from './frameworks.js'

// The SDK's traces would go to OpenAI's servers: nothing leaves this machine in a test.
setTracingDisabled(true)

const tg = await startToolgate(t)

type Output = ModelResponse['output'][number]

/** A model that answers each turn from a script, given what it was sent (the tool results so far). */
function scripted (turn: (n: number, input: string) => Output[]): Model {
  let n = 0
  return {
    async getResponse (request: ModelRequest): Promise<ModelResponse> {
      return { usage: new Usage(), output: turn(n++, JSON.stringify(request.input)) }
    },
    getStreamedResponse (): AsyncIterable<never> {
      throw new Error('the scripted model does not stream')
    }
  }
}

const call = (callId: string, name: string, args: unknown): Output => ({ type: 'function_call', callId, name, arguments: JSON.stringify(args), status: 'completed' })
const say = (text: string): Output => ({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] })

async function connect (t: Test, url: string): Promise<MCPServerStreamableHttp> {
  const server = new MCPServerStreamableHttp({ url, name: 'toolgate', requestInit: { headers: AUTH } })
  await server.connect()
  t.teardown(() => server.close())
  return server
}

/** The texts of the tool outputs the run produced, in order (a lone text item is kept as the item). */
function toolOutputs (items: ReadonlyArray<{ type: string }>): string[] {
  return items.filter((i) => i.type === 'tool_call_output_item').map((i) => {
    const output = (i as unknown as { output: unknown }).output as { type?: unknown, text?: unknown }
    return output?.type === 'text' && typeof output.text === 'string' ? output.text : JSON.stringify(output)
  })
}

t.test('a parallel turn: the SDK sends its calls at once, and same-key writes never overlap', async (t) => {
  const { runId, url } = await runWithOptions(tg)
  const server = await connect(t, url)
  const before = tg.executor.calls.length
  const agent = new Agent({
    name: 'builder',
    instructions: 'Build what you are asked.',
    mcpServers: [server],
    model: scripted((n) => n === 0
      ? [call('c1', 'build', { x: 1 }), call('c2', 'build', { x: 1 }), call('c3', 'build', { x: 2 }), call('c4', 'look', { x: 1 })]
      : [say('built')])
  })
  const result = await run(agent, 'Build on tile 1 twice and on tile 2, and look at tile 1.', { maxTurns: 5 })
  t.equal(result.finalOutput, 'built')
  const calls = tg.executor.calls.slice(before)
  t.equal(calls.length, 4, 'every call of the turn ran')
  t.ok(calls.every((c) => c.runId === runId), 'in the bound run')
  t.equal(sameKeyOverlaps(calls, 'build', 'x'), 0, 'no two writes to tile 1 overlapped at the executor')
  const outputs = toolOutputs(result.newItems)
  t.equal(outputs.length, 4)
  t.equal(outputs.filter((o) => o.includes('built')).length, 3, 'each build answered')
})

t.test('a loop: the model repeats the same call, toolgate stops the run and the model reads why', async (t) => {
  const { runId, url } = await runWithOptions(tg, { limits: { exactToolRepeatAdvisoryThreshold: 2, exactToolRepeatTerminationThreshold: 3 } })
  const server = await connect(t, url)
  let stoppedAt = -1
  const agent = new Agent({
    name: 'watcher',
    instructions: 'Look until it changes.',
    mcpServers: [server],
    model: scripted((n, input) => {
      if (STOPPED.test(input)) {
        stoppedAt = n
        return [say('toolgate stopped me')]
      }
      return [call(`c${n}`, 'look', { x: 7 })]
    })
  })
  const result = await run(agent, 'Look at tile 7 until it changes.', { maxTurns: 20 })
  t.equal(result.finalOutput, 'toolgate stopped me')
  t.equal(stoppedAt, 3, 'the third identical call was stopped')
  t.match(toolOutputs(result.newItems).at(-1), /terminated/)
  t.match(await runState(tg, runId), { state: 'terminated', terminationReason: 'exact_repeat' })
})

t.test('an approval: the held call waits in the inbox, a person approves it there, and the agent gets its result', async (t) => {
  const { runId, url } = await runWithOptions(tg)
  const server = await connect(t, url)
  const person = approveFromInbox(tg, runId)
  const before = tg.executor.calls.length
  const agent = new Agent({
    name: 'shipper',
    instructions: 'Ship what you are asked.',
    mcpServers: [server],
    model: scripted((n) => n === 0 ? [call('c1', 'ship', { k: 'order-9' })] : [say('shipped')])
  })
  const result = await run(agent, 'Ship order 9.', { maxTurns: 5 })
  t.same(await person.stop(), ['ship'], 'a person approved the held call in the inbox')
  t.equal(result.finalOutput, 'shipped')
  t.same(JSON.parse(toolOutputs(result.newItems)[0]!), { ok: true, tool: 'ship' })
  t.same(tg.executor.calls.slice(before).map((c) => [c.tool, c.runId]), [['ship', runId]], 'the approved call ran, once')
})
