/**
 * The page's files reach every way toolgate runs: from source, from the
 * built tree, and in the image.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import t from 'tap'
import { findUiDir } from '../../routes/ui.js'
import { buildTestApp } from '../helper.js'

const root = new URL('../../', import.meta.url).pathname

t.test('from source the page is found in ui/', async (t) => {
  t.equal(findUiDir(), `${root}ui/`)
})

t.test('the built tree finds the same directory', { skip: existsSync(`${root}dist/routes/ui.js`) ? false : 'dist/ is not built: run `npm run build` (npm test does)' }, async (t) => {
  const out = spawnSync(process.execPath, ['--input-type=module', '-e', `import { findUiDir } from '${root}dist/routes/ui.js'; console.log(findUiDir())`], { encoding: 'utf8' })
  t.equal(out.stdout.trim(), `${root}ui/`)
})

t.test('the image copies ui/ beside dist/', async (t) => {
  const dockerfile = await readFile(`${root}Dockerfile`, 'utf8')
  t.match(dockerfile, /^COPY ui \.\/ui$/m)
  // routes/ui.js looks for ui/ two levels up from itself: dist/routes/ in the image.
  t.match(dockerfile, /^COPY --from=build \/app\/dist\/routes \.\/dist\/routes$/m)
})

t.test('TOOLGATE_UI=false serves no page', async (t) => {
  const { app } = await buildTestApp(t, { config: { ui: false } })
  t.equal((await app.inject({ method: 'GET', url: '/ui/' })).statusCode, 404)
})

t.test('every file the page loads is served, and nothing else from the directory', async (t) => {
  const { app } = await buildTestApp(t)
  const html = (await app.inject({ method: 'GET', url: '/ui/' })).body
  const modules = new Set<string>()
  const linked = [...html.matchAll(/(?:src|href)="([a-z0-9-]+\.(?:js|css))"/g)].map((m) => m[1]!)
  const queue = [...linked]
  while (queue.length > 0) {
    const file = queue.shift()!
    if (modules.has(file)) continue
    modules.add(file)
    const res = await app.inject({ method: 'GET', url: `/ui/${file}` })
    t.equal(res.statusCode, 200, file)
    for (const m of res.body.matchAll(/from '\.\/([a-z0-9-]+\.js)'/g)) queue.push(m[1]!)
  }
  t.ok(modules.has('timeline.js') && modules.has('approvals.js') && modules.has('app.css'), [...modules].join(', '))
})
