import { readFile } from 'node:fs/promises'
import t from 'tap'
import { createConfig, lintFromString } from '@redocly/openapi-core'
import { renderOpenApi } from '../src/http/openapi.js'
import { buildTestApp } from './helper.js'

const checkedIn = (): Promise<string> => readFile(new URL('../openapi.yaml', import.meta.url), 'utf8')

t.test('openapi.yaml is exactly what the route schemas generate (run `npm run openapi` after changing a route)', async (t) => {
  const { app } = await buildTestApp(t)
  t.equal(await checkedIn(), await renderOpenApi(app))
})

t.test('openapi.yaml passes the Redocly linter with its recommended rules', async (t) => {
  const config = await createConfig({ extends: ['recommended'], rules: { 'info-license': 'off', 'info-license-url': 'off' } })
  const problems = await lintFromString({ source: await checkedIn(), absoluteRef: 'openapi.yaml', config })
  const errors = problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? ''}`)
  t.same(errors, [])
})
