/**
 * The promtool unit tests of the alerts (deploy/prometheus/alerts.test.yml)
 * cover every alert: each one is seen firing and seen silent, and promtool
 * fails when the alert's rule is made never to fire. test/deploy/prometheus.test.ts
 * runs the unit tests as they are.
 */
import { spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { parse, stringify } from 'yaml'
import { ALERTS, ALERT_TESTS, alertRules } from './expressions.js'

const PROMTOOL = process.env.TOOLGATE_TEST_PROMTOOL ?? 'promtool'

interface UnitTests { rule_files: string[], tests: Array<{ name: string, alert_rule_test?: Array<{ alertname: string, exp_alerts?: unknown[] }> }> }
const unit = parse(await readFile(ALERT_TESTS, 'utf8')) as UnitTests
const checks = unit.tests.flatMap((test) => test.alert_rule_test ?? [])
const alerts = (await alertRules()).flatMap((r) => (r.alert === undefined ? [] : [r.alert]))

t.test('every alert of deploy/ has a promtool unit test that sees it fire and one that sees it silent', async (t) => {
  t.ok(alerts.length >= 11, `${alerts.length} alerts`)
  for (const alert of alerts) {
    const mine = checks.filter((c) => c.alertname === alert)
    t.ok(mine.some((c) => (c.exp_alerts ?? []).length > 0), `${alert} is seen firing`)
    t.ok(mine.some((c) => (c.exp_alerts ?? []).length === 0), `${alert} is seen silent`)
  }
  const unknown = checks.map((c) => c.alertname).filter((name) => !alerts.includes(name))
  t.strictSame(unknown, [], 'the unit tests name only alerts that exist')
})

t.test('promtool test rules fails when any one alert is made never to fire', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-alerts-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const doc = parse(await readFile(ALERTS, 'utf8')) as { groups: Array<{ rules: Array<{ alert?: string, expr: string }> }> }
  await writeFile(join(dir, 'alerts.test.yml'), stringify({ ...unit, rule_files: ['alerts.yml'] }))
  const run = (): { status: number | null, output: string } => {
    const res = spawnSync(PROMTOOL, ['test', 'rules', join(dir, 'alerts.test.yml')], { encoding: 'utf8' })
    return { status: res.status, output: res.stdout + res.stderr }
  }
  await writeFile(join(dir, 'alerts.yml'), stringify(doc))
  const asIs = run()
  t.equal(asIs.status, 0, `the rules as they are pass: ${asIs.output}`)
  for (const alert of alerts) {
    const broken = structuredClone(doc)
    for (const rule of broken.groups.flatMap((g) => g.rules)) if (rule.alert === alert) rule.expr = 'vector(1) < 0'
    await writeFile(join(dir, 'alerts.yml'), stringify(broken))
    const res = run()
    t.not(res.status, 0, `${alert} never firing fails the unit tests`)
    t.match(res.output, `alertname: ${alert},`, `promtool names ${alert}`)
  }
})
