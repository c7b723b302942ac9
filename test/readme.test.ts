import { readFile } from 'node:fs/promises'
import t from 'tap'
import { SETTINGS } from '../src/config.js'
import { ERRORS } from '../src/errors.js'

const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')

t.test('the README documents every configuration variable with its default', async (t) => {
  for (const setting of Object.values(SETTINGS)) {
    const row = readme.split('\n').find((line) => line.startsWith(`| \`${setting.env}\` |`))
    t.ok(row, `${setting.env} has a row`)
    const shown = setting.default === null ? 'unset' : `\`${String(setting.default)}\``
    t.ok(row?.includes(`| ${shown} |`), `${setting.env} shows its default ${shown}`)
  }
})

t.test('the README documents every error code', async (t) => {
  for (const [code, { status }] of Object.entries(ERRORS)) {
    t.ok(readme.includes(`| \`${code}\` | ${status} |`), `${code} (${status})`)
  }
})

t.test('the README gives the two commands a newcomer runs', async (t) => {
  t.ok(readme.includes('npm install && npm start'))
  t.ok(readme.includes('npm install && npm test'))
})
