/**
 * No Docker engine runs here, so this test runs what the image runs: the
 * Dockerfile's CMD from the compiled tree (npm test builds dist/ first), then
 * its HEALTHCHECK command, then a SIGTERM as `docker stop` sends it.
 */
import { spawn, spawnSync } from 'node:child_process'
import { readFile, readdir } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { freePort } from '../helper.js'
import { TOOLGATE_NODE_FLAGS } from '../../bench/settings.js'
import t from 'tap'

const root = new URL('../../', import.meta.url).pathname

function instruction (dockerfile: string, name: string): string[] {
  const joined = dockerfile.replace(/\\\n\s*/g, ' ')
  return joined.split('\n').filter((l) => l.startsWith(name + ' ')).map((l) => l.slice(name.length + 1).trim())
}

function execForm (text: string): string[] {
  const json = text.slice(text.indexOf('['))
  return JSON.parse(json) as string[]
}


t.test('the Dockerfile is multi-stage, installs production dependencies only and runs as a non-root user', async (t) => {
  const dockerfile = await readFile(root + 'Dockerfile', 'utf8')
  t.ok(instruction(dockerfile, 'FROM').length >= 2, 'a build stage and a runtime stage')
  t.ok(instruction(dockerfile, 'RUN').some((r) => r.includes('npm ci --omit=dev')), 'the runtime installs production dependencies only')
  const user = instruction(dockerfile, 'USER')
  t.ok(user.length > 0 && !['root', '0'].includes(user.at(-1)!), 'runs as a non-root user')
  t.ok(instruction(dockerfile, 'HEALTHCHECK')[0]?.includes('/healthz'), 'HEALTHCHECK probes /healthz')
  t.same(instruction(dockerfile, 'STOPSIGNAL'), ['SIGTERM'])
})

t.test('the runtime stage ships what the server runs and no bench, scripts or tests; the image runs the Node LTS .ci/run tests', async (t) => {
  const dockerfile = await readFile(root + 'Dockerfile', 'utf8')
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '))
  const fromBuild = instruction(runtime, 'COPY').filter((c) => c.startsWith('--from=build')).map((c) => c.split(/\s+/)[1])
  t.same(fromBuild, ['/app/dist/src', '/app/dist/routes', '/app/dist/schemas', '/app/dist/examples/executor.js'])
  t.notMatch(runtime, /dist\/(bench|scripts|test)\b|COPY --from=build \/app\/dist \./, 'no dist/bench, dist/scripts or dist/test')
  const image = /ARG NODE_IMAGE=node:(\d+)-/.exec(dockerfile)?.[1]
  t.equal(image, '24', 'the image runs Node 24')
  const ci = await readFile(root + '.ci/run', 'utf8')
  t.match(ci, new RegExp(`node@${image}\\b`), '.ci/run tests on the same major version')
  const healthcheck = execForm(instruction(dockerfile, 'HEALTHCHECK')[0]!)
  t.not(healthcheck[0], 'node', 'the probe does not start a Node process')
})

t.test('the image, npm start and the bench run toolgate with the same node flags', async (t) => {
  const dockerfile = await readFile(root + 'Dockerfile', 'utf8')
  const pkg = JSON.parse(await readFile(root + 'package.json', 'utf8')) as { scripts: { start: string } }
  t.strictSame(execForm(instruction(dockerfile, 'CMD').at(-1)!), ['node', ...TOOLGATE_NODE_FLAGS, 'dist/src/server.js'])
  t.equal(pkg.scripts.start, ['node', ...TOOLGATE_NODE_FLAGS, 'dist/src/server.js'].join(' '))
})

t.test("the image's CMD starts the service, its HEALTHCHECK passes, and SIGTERM stops it with exit 0", { skip: existsSync(root + 'dist/src/server.js') ? false : 'dist/ is not built: run `npm run build` (npm test does)' }, async (t) => {
  const dockerfile = await readFile(root + 'Dockerfile', 'utf8')
  const [cmd, ...args] = execForm(instruction(dockerfile, 'CMD').at(-1)!)
  const healthcheck = execForm(instruction(dockerfile, 'HEALTHCHECK')[0]!)
  const port = await freePort()
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', NODE_ENV: 'production' }
  delete env.TOOLGATE_TOOLS_FILE
  const child = spawn(cmd!, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (d) => { output += String(d) })
  child.stderr.on('data', (d) => { output += String(d) })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })

  const before = spawnSync(healthcheck[0]!, healthcheck.slice(1), { env, timeout: 3000 })
  t.not(before.status, 0, 'HEALTHCHECK fails while nothing listens')
  let healthy = false
  for (let i = 0; i < 100 && !healthy; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    const probe = spawnSync(healthcheck[0]!, healthcheck.slice(1), { env, timeout: 3000 })
    healthy = probe.status === 0
  }
  t.ok(healthy, `HEALTHCHECK passes once the service is up${healthy ? '' : `; output: ${output}`}`)

  const tools = await fetch(`http://127.0.0.1:${port}/v1/tools`).then((r) => r.json()) as { tools: Array<{ name: string }> }
  t.ok(tools.tools.length > 0, 'the bundled example tools are served')

  // Draining keeps /healthz at 200 (the process is alive); the probe reads the status line, not just a connection.
  const notFound = spawnSync('bash', ['-c', healthcheck[2]!.replace('/healthz', '/no-such-route')], { env, timeout: 3000 })
  t.not(notFound.status, 0, 'a status other than 200 fails the probe')

  child.kill('SIGTERM')
  t.equal(await exited, 0, 'SIGTERM drains and exits 0')
})

t.test('every package the image runs is a production dependency: npm ci --omit=dev installs all it imports', async (t) => {
  const pkg = JSON.parse(await readFile(root + 'package.json', 'utf8')) as { dependencies: Record<string, string> }
  const shipped = new Set(Object.keys(pkg.dependencies))
  // What the runtime stage runs: the compiled src, routes and schemas, and the example executor `npm start` starts
  // (npm test builds dist/ first). The orchestrator loops beside it in examples/ drive the providers' SDKs from a
  // reader's own program; the service never loads them.
  const files: string[] = [`${root}dist/examples/executor.js`]
  for (const dir of ['src', 'routes', 'schemas']) {
    for (const entry of await readdir(`${root}dist/${dir}`, { recursive: true })) if (entry.endsWith('.js')) files.push(`${root}dist/${dir}/${entry}`)
  }
  t.ok(files.length > 50, `the compiled tree is there (${files.length} files)`)
  const imported = new Set<string>()
  for (const file of files) {
    const text = await readFile(file, 'utf8')
    for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)['"]([^'"./][^'"]*)['"]/gm)) {
      const spec = m[1]!
      if (spec.startsWith('node:')) continue
      imported.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!)
    }
  }
  t.ok(imported.has('fastify') && imported.has('undici'), 'the scan finds the imports')
  t.same([...imported].filter((name) => !shipped.has(name)).sort(), [], 'no import of a package outside "dependencies"')
})
