/**
 * Against a real Prometheus (Debian's package; `.ci/run` installs it): it
 * scrapes a toolgate this test starts, with the alert rules loaded; after
 * known traffic the test asks Prometheus's HTTP API for the batch rate, a
 * call-duration quantile and calls by status, and runs every expression of
 * the dashboard and the rules. Prometheus asks for OpenMetrics and gzip,
 * and the test checks that is what it was sent. Then promtool checks the rules, runs their
 * unit tests, and checks toolgate's /metrics. Without prometheus or promtool
 * these tests fail, they do not skip.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { buildTestApp, freePort, post, sleep, startExecutor, tool, type ExecutorCall } from '../helper.js'
import { ALERTS, ALERT_TESTS, alertRules, asPlainQuery, expressions } from './expressions.js'

const PROMETHEUS = process.env.TOOLGATE_TEST_PROMETHEUS ?? 'prometheus'
const PROMTOOL = process.env.TOOLGATE_TEST_PROMTOOL ?? 'promtool'

const ex = await startExecutor(t)
ex.on('slow', async () => {
  await sleep(150)
  return { content: 'slow answer' }
})
ex.on('look', async (call: ExecutorCall) => (call.callId === 'bad' ? { content: 'no such tile', isError: true } : { content: 'grass' }))
ex.on('paint', async (call: ExecutorCall, _req, reply) => (call.callId === 'w1' ? reply.code(503).send({}) : { content: 'painted' }))
const { app } = await buildTestApp(t, { tools: [tool('slow', ex.url, { readOnly: true }), tool('look', ex.url, { readOnly: true }), tool('paint', ex.url)] })
/** The format of each /metrics answer: what Prometheus was sent. */
const scrapes: Array<{ type: string, encoding: string }> = []
app.addHook('onSend', async (req, reply) => {
  if (req.url === '/metrics') scrapes.push({ type: String(reply.getHeader('content-type')), encoding: String(reply.getHeader('content-encoding')) })
})
const target = new URL(await app.listen({ port: 0, host: '127.0.0.1' }))

const dir = await mkdtemp(join(tmpdir(), 'toolgate-prometheus-'))
const port = await freePort()
await writeFile(join(dir, 'prometheus.yml'), [
  'global: { scrape_interval: 1s, evaluation_interval: 1s }',
  `rule_files: [${JSON.stringify(ALERTS)}]`,
  'scrape_configs:',
  '  - job_name: toolgate',
  `    static_configs: [{ targets: ["127.0.0.1:${target.port}"] }]`
].join('\n'))
let prometheus: ChildProcess | undefined
let log = ''
t.teardown(async () => {
  if (prometheus !== undefined && prometheus.exitCode === null) {
    const exited = new Promise((resolve) => prometheus!.once('exit', resolve))
    prometheus.kill('SIGTERM')
    await Promise.race([exited, sleep(10_000).then(() => prometheus!.kill('SIGKILL'))])
  }
  await rm(dir, { recursive: true, force: true })
})

const base = `http://127.0.0.1:${port}`
async function query (promql: string): Promise<Array<{ metric: Record<string, string>, value: [number, string] }>> {
  const res = await fetch(`${base}/api/v1/query?${new URLSearchParams({ query: promql })}`)
  const body = await res.json() as { status: string, error?: string, data: { resultType: string, result: Array<{ metric: Record<string, string>, value: [number, string] }> } }
  if (body.status !== 'success') throw new Error(`${promql}: ${body.error}`)
  return body.data.resultType === 'vector' ? body.data.result : []
}
const scalar = async (promql: string): Promise<number> => Number((await query(promql))[0]?.value[1] ?? NaN)
/** Waits on Prometheus's own state (its scrapes), not on a guess of time. */
async function until (what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}; prometheus said:\n${log}`)
    await sleep(250)
  }
}

t.test('Prometheus scrapes toolgate and answers the batch rate, a call-duration quantile and calls by status after known traffic', async (t) => {
  prometheus = spawn(PROMETHEUS, [
    `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'
  ], { stdio: ['ignore', 'pipe', 'pipe'] })
  prometheus.stdout!.on('data', (d) => { log += String(d) })
  prometheus.stderr!.on('data', (d) => { log += String(d) })
  await until('Prometheus to be ready', async () => (await fetch(`${base}/-/ready`)).ok)
  // Series appear with their first event: a first slow call before the first scrape makes the
  // duration histogram exist there, so a rate over the traffic below has two samples.
  await post(app, '/v1/runs', { runId: 'traffic' })
  t.equal((await post(app, '/v1/runs/traffic/batches', { calls: [{ id: 's0', name: 'slow' }] })).body.results[0].status, 'ok')
  await until('a first scrape of toolgate', async () => (await scalar('sum(toolgate_batches_total)')) === 1)
  t.equal(await scalar('sum(toolgate_uncertain_writes_total{tool="paint"})'), 0, 'the uncertain writes of paint are scraped at 0 before the first')

  const one = await post(app, '/v1/runs/traffic/batches', { calls: [{ id: 's1', name: 'slow' }, { id: 's2', name: 'slow' }, { id: 'ok', name: 'look' }, { id: 'x', name: 'fly' }] })
  const two = await post(app, '/v1/runs/traffic/batches', { calls: [{ id: 'w1', name: 'paint' }, { id: 'w2', name: 'paint' }] })
  const three = await post(app, '/v1/runs/traffic/batches', { calls: [{ id: 'bad', name: 'look' }] })
  const statuses = [one, two, three].flatMap((b) => b.body.results.map((r: { status: string }) => r.status))
  t.strictSame(statuses, ['ok', 'ok', 'ok', 'rejected', 'uncertain', 'blocked', 'error'], 'the traffic sent')

  await until('a scrape after the traffic', async () => (await scalar('sum(toolgate_batches_total)')) === 4)
  t.ok(scrapes.length > 0 && scrapes.every((s) => s.type.startsWith('application/openmetrics-text;') && s.encoding === 'gzip'), 'Prometheus was sent gzipped OpenMetrics, and read it')
  t.equal(await scalar('sum(toolgate_batches_total{outcome="completed"})'), 4, 'four batches completed')
  const rate = await scalar('sum(rate(toolgate_batches_total[1m]))')
  t.ok(rate > 0, `the batch rate is positive (${rate}/s)`)
  const byStatus = Object.fromEntries((await query('sum by (status) (toolgate_tool_calls_total)')).map((s) => [s.metric.status, Number(s.value[1])]).filter(([, n]) => n !== 0))
  t.strictSame(byStatus, { ok: 4, rejected: 1, uncertain: 1, blocked: 1, error: 1 }, 'calls by status')
  const p50 = await scalar('histogram_quantile(0.5, sum by (le) (rate(toolgate_tool_call_duration_seconds_bucket{tool="slow"}[1m])))')
  t.ok(p50 >= 0.1 && p50 <= 2.5, `the median slow call, which sleeps 150 ms, lies in the buckets above 100 ms (${p50} s)`)
  t.equal(await scalar('sum(toolgate_uncertain_writes_total{tool="paint"})'), 1, 'the uncertain write is counted for its tool')
  // The first uncertain write since start: increase() sees it because the series was scraped at 0 before.
  const first = await scalar('sum(increase(toolgate_uncertain_writes_total{tool="paint"}[1m]))')
  t.ok(first > 0, `increase() over the first uncertain write after start is above 0 (${first})`)
  t.equal(await scalar('count(sum by (tool) (increase(toolgate_uncertain_writes_total[1m])) > 0)'), 1, 'an alert expression over it has a series')
})

t.test('Prometheus loads the alert rules and evaluates every expression of the dashboard and the rules without error', async (t) => {
  const rules = await alertRules()
  await until('the rules to be evaluated', async () => {
    const res = await (await fetch(`${base}/api/v1/rules`)).json() as { data: { groups: Array<{ rules: Array<{ health: string }> }> } }
    const loaded = res.data.groups.flatMap((g) => g.rules)
    return loaded.length === rules.length && loaded.every((r) => r.health === 'ok')
  })
  for (const { where, expr } of await expressions()) {
    await t.resolves(query(asPlainQuery(expr)), where)
  }
})

t.test('promtool checks the alert rules and passes their unit tests', async (t) => {
  const check = spawnSync(PROMTOOL, ['check', 'rules', ALERTS], { encoding: 'utf8' })
  t.equal(check.status, 0, check.stdout + check.stderr)
  const unit = spawnSync(PROMTOOL, ['test', 'rules', ALERT_TESTS], { encoding: 'utf8' })
  t.equal(unit.status, 0, unit.stdout + unit.stderr)
})

t.test("promtool check metrics passes on toolgate's /metrics", async (t) => {
  const text = await (await fetch(new URL('/metrics', target))).text()
  const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' })
  const problems = (check.stdout + check.stderr).split('\n').filter((l) => l.trim() !== '')
  t.strictSame(problems, [], 'no complaint')
  t.equal(check.status, 0)
})
