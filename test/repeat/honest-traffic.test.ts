import t from 'tap'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'

/**
 * A scripted session of what an honest coding agent sends, turn by turn,
 * under the default limits: none of the loop detectors may flag it.
 */
t.test('a realistic honest agent session is never flagged by any loop detector', async (t) => {
  const ex = await startExecutor(t)
  const schema = (properties: Record<string, unknown>) => ({ inputSchema: { type: 'object', properties } })
  const { app, logs } = await buildTestApp(t, {
    tools: [
      tool('read_file', ex.url, { readOnly: true, ...schema({ path: { type: 'string' } }) }),
      tool('list_dir', ex.url, { readOnly: true, ...schema({ path: { type: 'string' } }) }),
      tool('write_file', ex.url, { conflictKey: 'file:{/path}', ...schema({ path: { type: 'string' }, content: { type: 'string' } }) }),
      tool('run_tests', ex.url, schema({ filter: { type: 'string' } })),
      tool('search', ex.url, { readOnly: true, ignoreArguments: ['/request_id'], ...schema({ query: { type: 'string' }, request_id: { type: 'string' } }) }),
      tool('job_status', ex.url, { readOnly: true, trackExactRepeats: false, ...schema({ job: { type: 'string' } }) }),
      tool('start_job', ex.url, schema({ kind: { type: 'string' } }))
    ]
  })
  // The executors answer as real ones would: files hold what was written, tests pass once fixed, a job moves on.
  const files = new Map<string, string>([['/src/app.ts', 'v0'], ['/src/util.ts', 'u0']])
  let polls = 0
  let testsRun = 0
  ex.on('read_file', (c) => files.has(String(c.arguments.path)) ? { content: files.get(String(c.arguments.path)) } : { content: 'no such file', isError: true })
  ex.on('list_dir', () => ({ content: [...files.keys()].sort() }))
  ex.on('write_file', (c) => {
    const path = String(c.arguments.path)
    if (!path.startsWith('/src/')) return { content: 'permission denied', isError: true }
    files.set(path, String(c.arguments.content))
    return { content: `wrote ${path}` }
  })
  ex.on('run_tests', () => ({ content: ++testsRun < 3 ? `${testsRun} failing` : 'all passed', isError: false }))
  ex.on('search', (c) => ({ content: `results for ${String(c.arguments.query)}` }))
  ex.on('start_job', () => ({ content: { job: 'j1' } }))
  ex.on('job_status', () => {
    polls++
    return { content: polls < 4 ? { state: 'queued', position: 4 - polls } : polls < 12 ? { state: 'running', percent: (polls - 3) * 12 } : { state: 'done' } }
  })

  const run = await post(app, '/v1/runs', { events: 'lifecycle' })
  const runId: string = run.body.runId
  let n = 0
  const turns: Array<Array<[string, Record<string, unknown>]>> = [
    [['list_dir', { path: '/src' }]],
    [['read_file', { path: '/src/app.ts' }], ['read_file', { path: '/src/util.ts' }]],
    [['search', { query: 'parseConfig', request_id: 'q1' }]],
    [['read_file', { path: '/src/missing.ts' }]],
    [['search', { query: 'parseConfig(', request_id: 'q2' }]],
    [['write_file', { path: '/etc/app.ts', content: 'v1' }]],
    [['write_file', { path: '/src/app.ts', content: 'v1' }]],
    [['run_tests', {}]],
    [['read_file', { path: '/src/app.ts' }]],
    [['write_file', { path: '/src/app.ts', content: 'v2' }]],
    [['run_tests', {}]],
    [['read_file', { path: '/src/util.ts' }], ['write_file', { path: '/src/util.ts', content: 'u1' }]],
    [['run_tests', {}]],
    [['list_dir', { path: '/src' }]],
    [['start_job', { kind: 'build' }]],
    ...Array.from({ length: 13 }, () => [['job_status', { job: 'j1' }]] as Array<[string, Record<string, unknown>]>),
    [['read_file', { path: '/src/app.ts' }], ['read_file', { path: '/src/util.ts' }]],
    [['run_tests', { filter: 'app' }]],
    [['write_file', { path: '/src/new.ts', content: 'n1' }]],
    [['list_dir', { path: '/src' }]]
  ]
  const statuses: string[] = []
  for (const [i, calls] of turns.entries()) {
    const res = await post(app, `/v1/runs/${runId}/batches`, { calls: calls.map(([name, args]) => ({ id: `c${++n}`, name, arguments: args })) })
    t.equal(res.status, 200, `turn ${i + 1}`)
    statuses.push(...res.body.results.map((r: { status: string }) => r.status))
    t.same(res.body.policyMessages, [], `turn ${i + 1}: no policy message`)
    t.same(res.body.events.filter((e: { type: string }) => e.type === 'tool.repeat_detected'), [], `turn ${i + 1}: no detection`)
    t.equal(res.body.continue, true, `turn ${i + 1}: the run goes on`)
  }
  t.equal(statuses.filter((s) => s === 'error').length, 2, 'the session had its honest failures (a missing file, a denied path)')
  t.equal(polls, 13, 'and polled a status that moved on')
  const summary = (await app.inject({ url: `/v1/runs/${runId}/summary` })).json()
  for (const kind of ['exact', 'cycle', 'errors', 'no_progress']) t.same(summary.loopDetections[kind], { advisories: 0, terminations: 0 }, kind)
  t.notMatch(logs.join(''), /loop detected|repeat detected/)
})
