/**
 * The dashboard and the alert rules use only metrics toolgate exports: each
 * name in their expressions is checked against a real app's /metrics after
 * some traffic (with an external authorizer configured, so its metrics are
 * exported too), and every toolgate metric family has a dashboard panel.
 */
import t from 'tap'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'
import { alertRules, expressions, exportedNames, metricNames } from './expressions.js'

const ex = await startExecutor(t)
const { app } = await buildTestApp(t, { tools: [tool('look', ex.url, { readOnly: true }), tool('poke', ex.url)], config: { authorizerUrl: `${ex.url}/authorize` } })
await post(app, '/v1/runs', { runId: 'names' })
await post(app, '/v1/runs/names/batches', { calls: [{ id: 'c1', name: 'look' }, { id: 'c2', name: 'poke' }, { id: 'c3', name: 'fly' }] })
const exposition = (await app.inject({ method: 'GET', url: '/metrics' })).body
const exported = exportedNames(exposition)

t.test('every expression of the dashboard and the alerts names only metrics toolgate exports', async (t) => {
  const all = await expressions()
  t.ok(all.length >= 20, `${all.length} expressions`)
  for (const { where, expr } of all) {
    const names = metricNames(expr)
    t.ok(names.length > 0 || /\bup\{/.test(expr), `${where} uses a metric`)
    for (const name of names) t.ok(exported.has(name), `${where}: ${name} is exported`)
  }
})

t.test('every metric family toolgate exports has a panel on the dashboard', async (t) => {
  const families = [...exposition.matchAll(/^# TYPE (toolgate_\S+) \S+$/gm)].map((m) => m[1]!)
  t.ok(families.length >= 39, `${families.length} families`)
  const onPanels = new Set((await expressions()).filter((e) => e.where.startsWith('panel ')).flatMap((e) => metricNames(e.expr)))
  for (const family of families) {
    const series = [family, `${family}_bucket`]
    t.ok(series.some((name) => onPanels.has(name)), `${family} has a panel`)
  }
})

t.test('the check itself catches a name toolgate does not export', async (t) => {
  t.notOk(exported.has('toolgate_made_up_total'))
  t.strictSame(metricNames('sum(rate(toolgate_made_up_total[5m])) / on() up'), ['toolgate_made_up_total'])
})

t.test('every alert has a summary and a runbook entry in docs/operations.md', async (t) => {
  const { readFile } = await import('node:fs/promises')
  const runbook = await readFile(new URL('../../docs/operations.md', import.meta.url), 'utf8')
  for (const rule of await alertRules()) {
    t.ok(rule.annotations?.summary, `${rule.alert} has a summary`)
    const anchor = rule.alert!.toLowerCase()
    t.equal(rule.annotations?.runbook, `docs/operations.md#${anchor}`, `${rule.alert} points at its runbook`)
    t.ok(runbook.includes(`### ${rule.alert}\n`), `docs/operations.md has a section ${rule.alert}`)
  }
})
