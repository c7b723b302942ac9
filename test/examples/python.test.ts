/**
 * The Python example (examples/python/openai_chat.py) with Debian's python3,
 * standard library only, against a scripted Chat Completions server and a
 * listening toolgate: the completion goes to toolgate as the API returned it,
 * a turn held for approval is waited out, and `messages` reach the model.
 */
import { spawn } from 'node:child_process'
import { access } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { buildTestApp, startExecutor, tool } from '../helper.js'
import { checkChat, startModelServer } from '../formats/model-servers.js'

const PYTHON = '/usr/bin/python3'
const EXAMPLE = fileURLToPath(new URL('../../examples/python/openai_chat.py', import.meta.url))
const hasPython = await access(PYTHON).then(() => true, () => false)

const completion = (message: object, finish: string): object => ({
  id: 'chatcmpl-py', object: 'chat.completion', created: 1764000000, model: 'gpt-test', choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: null, ...message }, logprobs: null, finish_reason: finish }], usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 }
})
const fn = (id: string, name: string, args: object | string): object => ({ id, type: 'function', function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) } })

t.test('the Python loop runs to its answer, waits out a turn held for approval, and every message it sends is valid for the API', { skip: hasPython || process.env.CI !== undefined ? false : `no ${PYTHON} (apt-get install python3; .ci/run does)` }, async (t) => {
  const script = [
    completion({ tool_calls: [fn('call_1', 'look', { x: 1, y: 2 }), fn('call_2', 'fly', {})] }, 'tool_calls'),
    completion({ tool_calls: [fn('call_3', 'paint', { x: 2, y: 3, color: 'red' })] }, 'tool_calls'),
    completion({ content: 'Painted it blue.' }, 'stop')
  ]
  const model = await startModelServer(t, checkChat, script, new Set(['call_2']))
  const ex = await startExecutor(t)
  ex.on('look', (call) => ({ content: { tile: 'grass', at: [call.arguments.x, call.arguments.y] } }))
  ex.on('paint', (call) => ({ content: { painted: call.arguments.color } }))
  const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('paint', ex.url, { requiresApproval: true })] })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })

  const child = spawn(PYTHON, [EXAMPLE, 'Paint 2,3 red.'], {
    env: { PATH: process.env.PATH ?? '', TOOLGATE_URL: url, TOOLGATE_POLL_SECONDS: '0.02', OPENAI_BASE_URL: `${model.origin}/v1`, OPENAI_API_KEY: 'test', OPENAI_MODEL: 'gpt-test' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.teardown(() => { child.kill('SIGKILL') })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c })
  const decided = new Promise<number>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c
      const m = /turn (\S+) of run (\S+) waits for a person to approve call_3 \(paint\)/.exec(stderr)
      if (m === null || stderr.includes('#decided')) return
      stderr += '#decided'
      t.equal(ex.calls.filter((c) => c.tool === 'paint').length, 0, 'the held write did not run before the decision')
      fetch(`${url}/v1/runs/${m[2]!}/batches/${m[1]!}/approvals`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ decisions: [{ callId: 'call_3', approve: true, arguments: { x: 2, y: 3, color: 'blue' } }] })
      }).then((res) => resolve(res.status), reject)
    })
  })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  t.equal(code, 0, stderr)
  t.equal(await decided, 200)
  t.equal(stdout, 'Painted it blue.\n')
  t.strictSame(model.violations, [])
  t.equal(model.requests.length, 3)
  t.strictSame(model.requests[0].tools.map((x: any) => x.function.name), ['look', 'paint'], 'the tools came from toolgate in the Chat shape')
  t.strictSame(model.requests[2].messages.map((m: any) => [m.role, m.tool_call_id ?? null]), [
    ['user', null], ['assistant', null], ['tool', 'call_1'], ['tool', 'call_2'], ['assistant', null], ['tool', 'call_3']
  ], 'each turn\'s messages appended as toolgate answered them')
  t.match(model.requests[2].messages[5].content, /blue/, 'the model read the approved, edited write\'s result')
  t.strictSame(ex.calls.map((c) => [c.tool, c.arguments]), [['look', { x: 1, y: 2 }], ['paint', { x: 2, y: 3, color: 'blue' }]])
})
