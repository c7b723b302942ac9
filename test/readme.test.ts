import { access, readFile, readdir } from 'node:fs/promises'
import t from 'tap'
import { SETTINGS } from '../src/config.js'
import { CALL_ERRORS, ERRORS } from '../src/errors.js'
import { SEED_VARIABLE } from './seed.js'

const root = new URL('../', import.meta.url)
const read = (path: string): Promise<string> => readFile(new URL(path, root), 'utf8')

const readme = await read('README.md')
const docPages = (await readdir(new URL('docs/', root))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)
const pages = new Map<string, string>([['README.md', readme]])
for (const page of docPages) pages.set(page, await read(page))

t.test('the configuration page documents every configuration variable with its default', async (t) => {
  const page = await read('docs/configuration.md')
  for (const setting of Object.values(SETTINGS)) {
    const row = page.split('\n').find((line) => line.startsWith(`| \`${setting.env}\` |`))
    t.ok(row, `${setting.env} has a row`)
    const shown = setting.default === null ? 'unset' : `\`${String(setting.default)}\``
    t.ok(row?.includes(`| ${shown} |`), `${setting.env} shows its default ${shown}`)
  }
})

t.test('the errors page documents every error code with its status', async (t) => {
  const page = await read('docs/errors.md')
  for (const [code, { status }] of Object.entries(ERRORS)) {
    t.ok(page.includes(`| \`${code}\` | ${status} |`), `${code} (${status})`)
  }
})

t.test('the errors page documents every code a call result gives the model, and no other', async (t) => {
  const page = await read('docs/errors.md')
  const section = page.slice(page.indexOf('## Codes the model reads'))
  t.ok(section.length < page.length, 'the page has the section')
  for (const code of Object.keys(CALL_ERRORS)) t.ok(section.includes(`| \`${code}\` |`), code)
  const rows = [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1])
  t.same(rows.filter((c) => !(c! in CALL_ERRORS)), [], 'every code the section lists is in the catalogue')
})

t.test('the README gives the two commands a newcomer runs', async (t) => {
  t.ok(readme.includes('npm install && npm start'))
  t.ok(readme.includes('npm install && npm test'))
})

t.test('the README stays short: what toolgate is, the two commands, one loop, where to go next', async (t) => {
  t.ok(readme.split('\n').length <= 150, `${readme.split('\n').length} lines`)
  t.ok(readme.includes('](docs/getting-started.md)'))
  t.ok(readme.includes('](docs/python.md)'))
  t.ok(readme.includes('](docs/testing.md)'))
  t.notMatch(readme, /^## (Tests|Performance|API)$/m, 'the reference lives in docs/')
})

t.test('docs/testing.md tells how the Redis tests find a Redis and how a random test is replayed; getting-started runs the example executor alone', async (t) => {
  const testing = pages.get('docs/testing.md')!
  t.ok(testing.includes('TOOLGATE_TEST_REDIS_URL'))
  t.ok(testing.includes(`${SEED_VARIABLE}=N`))
  t.ok(pages.get('docs/getting-started.md')!.includes('node dist/examples/executor.js'))
})

t.test('the README, docs/, the OpenAPI description and the example executor never point outside the repository', async (t) => {
  const texts = new Map(pages)
  texts.set('openapi.yaml', await read('openapi.yaml'))
  texts.set('examples/executor.ts', await read('examples/executor.ts'))
  for (const [name, text] of texts) {
    t.notMatch(text, /\.\.\/shared|SPEC\.md|SPEC section/, `${name} names no file outside the repository`)
  }
})

t.test('the docs index and the README list every page of docs/', async (t) => {
  const index = pages.get('docs/README.md')!
  for (const page of docPages) {
    if (page === 'docs/README.md') continue
    const file = page.slice('docs/'.length)
    t.ok(index.includes(`](${file})`), `docs/README.md links ${file}`)
    t.ok(readme.includes(`](${page})`), `README.md links ${page}`)
  }
})

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
function anchorOf (heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-')
}

function anchorsOf (markdown: string): Set<string> {
  const anchors = new Set<string>()
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    const m = /^#{1,6} (.*)$/.exec(line)
    if (!fenced && m !== null) anchors.add(anchorOf(m[1]!))
  }
  return anchors
}

t.test('every relative link of the README and docs/ reaches a file of the repository, and its heading', async (t) => {
  for (const [name, text] of pages) {
    const base = new URL(name, root)
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue
      const [path = '', fragment] = target!.split('#')
      const file = path === '' ? base : new URL(path, base)
      t.ok(file.href.startsWith(root.href), `${name}: ${target} stays inside the repository`)
      const exists = await access(file).then(() => true, () => false)
      t.ok(exists, `${name}: ${target} exists`)
      if (exists && fragment !== undefined && file.pathname.endsWith('.md')) {
        t.ok(anchorsOf(await readFile(file, 'utf8')).has(fragment), `${name}: ${target} names a heading`)
      }
    }
  }
})
