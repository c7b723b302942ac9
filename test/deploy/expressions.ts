/**
 * The PromQL of deploy/: every alert rule's expression and every query of
 * the Grafana dashboard (panels and template variables), with the metric
 * names each one uses.
 */
import { readFile } from 'node:fs/promises'
import { parse } from 'yaml'

export const root = new URL('../../', import.meta.url).pathname
export const ALERTS = `${root}deploy/prometheus/alerts.yml`
export const ALERT_TESTS = `${root}deploy/prometheus/alerts.test.yml`
export const DASHBOARD = `${root}deploy/grafana/toolgate.json`

export interface Expression { where: string, expr: string }

interface Rule { alert?: string, record?: string, expr: string, annotations?: Record<string, string> }

export async function alertRules (): Promise<Rule[]> {
  const doc = parse(await readFile(ALERTS, 'utf8')) as { groups: Array<{ rules: Rule[] }> }
  return doc.groups.flatMap((g) => g.rules)
}

export async function expressions (): Promise<Expression[]> {
  const out: Expression[] = (await alertRules()).map((r) => ({ where: `alert ${r.alert ?? r.record}`, expr: r.expr }))
  const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as {
    panels: Array<{ title: string, targets?: Array<{ expr: string }> }>
    templating: { list: Array<{ name: string, query?: unknown }> }
  }
  for (const panel of dashboard.panels) for (const target of panel.targets ?? []) out.push({ where: `panel "${panel.title}"`, expr: target.expr })
  for (const variable of dashboard.templating.list) {
    const q = variable.query as { query?: string } | string | undefined
    const text = typeof q === 'string' ? q : q?.query
    // label_values(metric{...}, label): the metric is what must exist.
    const m = text?.match(/^label_values\((.*),\s*\w+\)$/)
    if (m !== null && m !== undefined) out.push({ where: `variable $${variable.name}`, expr: m[1]! })
  }
  return out
}

/** Metric names an expression uses: toolgate's own and the Node.js process metrics it exports. `up` is Prometheus's. */
export function metricNames (expr: string): string[] {
  return [...new Set(expr.match(/\b(?:toolgate|process|nodejs)_[a-z0-9_]+\b/g) ?? [])]
}

/** Grafana's variables replaced by what a plain Prometheus query takes. */
export function asPlainQuery (expr: string): string {
  return expr.replaceAll('$__rate_interval', '1m').replaceAll('$job', '.+').replaceAll('$instance', '.+')
}

/** Every series name an exposition text can hold: each family's name, and a histogram's or summary's parts. */
export function exportedNames (exposition: string): Set<string> {
  const names = new Set<string>()
  for (const line of exposition.split('\n')) {
    const m = line.match(/^# TYPE (\S+) (\S+)$/)
    if (m === null) continue
    const [, name, type] = m as unknown as [string, string, string]
    names.add(name)
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s)
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s)
  }
  return names
}
