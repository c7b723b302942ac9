/**
 * The import rules of docs/architecture.md, checked on the source itself:
 * no import cycles (type-only imports count); the folders in layers, each
 * importing only those below it (the one exception listed, and for types
 * only), so no folders load each other; and the pure cores (preparation,
 * scheduling, the repeat trackers, the provider formats) reach no HTTP
 * server or client, no store and no MCP SDK, directly or through what they
 * import. Each violation is reported with its chain.
 */
import { readFile, readdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { asGraph, buildGraph, chainTo, cycles, groupGraph, onDisk } from './graph.js'

const root = fileURLToPath(new URL('../../', import.meta.url))
/** The folders whose imports are checked: the service, its routes and their schemas. */
const SCANNED = ['src', 'routes', 'schemas']
/** The pure cores, and what none of them may reach. */
const CORES = ['src/prepare/', 'src/schedule/', 'src/repeat/', 'src/formats/']
const EDGE_PACKAGES = /^(fastify|@fastify\/.*|undici|ioredis|@modelcontextprotocol\/.*)$/
const isEdge = (target: string): boolean => EDGE_PACKAGES.test(target) || target.startsWith('src/store/')

/**
 * The folders in layers, bottom first: a folder imports only folders below
 * it. A layer is a folder (ending in `/`) or a list of files of `src/`
 * itself. docs/architecture.md draws the same list.
 */
const LAYERS: ReadonlyArray<string | readonly string[]> = [
  ['src/clock.ts', 'src/errors.ts', 'src/iso-time.ts', 'src/json-text.ts', 'src/logger.ts'],
  // Worker threads for work that could hold the event loop, taken in turn by owner.
  'src/workers/',
  'src/dispatch/',
  'src/model/',
  'src/repeat/',
  'src/schedule/',
  'src/prepare/',
  'src/receipts/',
  'src/formats/',
  // The settings: the loop kinds' limits among them.
  ['src/config.ts'],
  'schemas/',
  'src/tools/',
  'src/store/',
  'src/runs/',
  'src/telemetry/',
  'src/events/',
  'src/uncertain/',
  'src/conflicts/',
  'src/approvals/',
  'src/guards/',
  'src/batch/',
  'src/auth/',
  'src/mcp/',
  'src/http/',
  'src/mcp-server/',
  ['src/services.ts'],
  'routes/',
  ['src/app.ts'],
  ['src/cli.ts', 'src/server.ts']
]
/** The imports up the layers there are, by layer, each with why; each is type-only. */
const UPWARD: Readonly<Record<string, string>> = {
  'src/approvals/ -> src/batch/': 'the approvals service names the engine it hands a decided batch to (BatchEngine, TakenUp)'
}
const layerName = (layer: string | readonly string[]): string => typeof layer === 'string' ? layer : layer.join(' ')
const layerOf = (path: string): string | null => {
  const layer = LAYERS.find((l) => typeof l === 'string' ? path.startsWith(l) : l.includes(path))
  return layer === undefined ? null : layerName(layer)
}
const rank = new Map(LAYERS.map((l, i) => [layerName(l), i]))

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

t.test('every folder of the source has its layer', async (t) => {
  const unplaced = [...graph.keys()].filter((p) => layerOf(p) === null)
  t.same(unplaced, [], 'each file is in a layer of LAYERS')
})

t.test('a folder imports only the folders below it, but for the listed imports of types', async (t) => {
  const layers = groupGraph(graph, layerOf)
  const loads = groupGraph(graph, layerOf, true)
  const upward: string[] = []
  for (const [from, out] of layers) {
    for (const [to, edges] of out) {
      if (rank.get(to)! < rank.get(from)!) continue
      const arrow = `${from} -> ${to}`
      upward.push(arrow)
      if (UPWARD[arrow] === undefined) t.fail(`${arrow} runs up the layers: ${edges.join(', ')}`)
      const loaded = loads.get(from)?.get(to) ?? []
      if (loaded.length > 0) t.fail(`${arrow} loads the layer above at run time: ${loaded.join(', ')}`)
    }
  }
  t.same(upward.sort(), Object.keys(UPWARD).sort(), 'the imports up the layers are the listed ones, no more, no fewer')
})

t.test('no folders load each other', async (t) => {
  const found = cycles(asGraph(groupGraph(graph, layerOf, true)))
  for (const { chain } of found) t.fail(`folders that load each other: ${chain.join(' -> ')}`)
  t.equal(found.length, 0, 'no loop between folders at run time')
})
