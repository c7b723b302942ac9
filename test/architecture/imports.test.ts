/**
 * The import rules of docs/architecture.md, checked on the source itself:
 * no import cycles (type-only imports count), and the pure cores
 * (preparation, scheduling, the repeat trackers, the provider formats)
 * reach no HTTP server or client, no store and no MCP SDK, directly or
 * through what they import. Each violation is reported with its chain.
 */
import { readFile, readdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { buildGraph, chainTo, cycles, onDisk } from './graph.js'

const root = fileURLToPath(new URL('../../', import.meta.url))
/** The folders whose imports are checked: the service, its routes and their schemas. */
const SCANNED = ['src', 'routes', 'schemas']
/** The pure cores, and what none of them may reach. */
const CORES = ['src/prepare/', 'src/schedule/', 'src/repeat/', 'src/formats/']
const EDGE_PACKAGES = /^(fastify|@fastify\/.*|undici|ioredis|@modelcontextprotocol\/.*)$/
const isEdge = (target: string): boolean => EDGE_PACKAGES.test(target) || target.startsWith('src/store/')

const sources = new Map<string, string>()
for (const dir of SCANNED) {
  for (const entry of await readdir(`${root}${dir}`, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue
    const path = `${entry.parentPath.slice(root.length)}/${entry.name}`
    sources.set(path, await readFile(`${root}${path}`, 'utf8'))
  }
}
const graph = buildGraph(sources, onDisk(root))

t.test('every relative import names a file of the tree', async (t) => {
  t.ok(sources.size > 100, `${sources.size} files scanned`)
  const unresolved = [...graph].flatMap(([path, imports]) => imports.unresolved.map((s) => `${path}: ${s}`))
  t.same(unresolved, [], 'no import names a missing file')
})

t.test('the source has no import cycle, type-only imports included', async (t) => {
  const found = cycles(graph)
  for (const { files, chain } of found) {
    t.fail(`import cycle among ${files.length} files (${files.join(', ')}): ${chain.join(' -> ')}`)
  }
  t.equal(found.length, 0, 'no cycle')
})

t.test('preparation, scheduling, the repeat trackers and the provider formats reach no fastify, undici, ioredis, MCP SDK or store code', async (t) => {
  const cores = [...graph.keys()].filter((p) => CORES.some((c) => p.startsWith(c))).sort()
  t.ok(cores.length > 20, `${cores.length} files of the cores checked`)
  for (const path of cores) {
    const chain = chainTo(graph, path, isEdge)
    if (chain !== null) t.fail(`${path} reaches ${chain.at(-1)!}: ${chain.join(' -> ')}`)
  }
})
