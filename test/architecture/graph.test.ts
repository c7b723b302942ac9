import t from 'tap'
import { asGraph, buildGraph, chainTo, cycles, groupGraph, packageOf, specifiers } from './graph.js'

const tree = (files: Record<string, string>): ReturnType<typeof buildGraph> => buildGraph(new Map(Object.entries(files)))

t.test('every form of import names its module, type-only ones included', async (t) => {
  const source = [
    "import a from './a.js'",
    "import type { B } from './b.js'",
    "import { type C, d } from '../c.js'",
    "export { e } from './e.js'",
    "export type * from './f.js'",
    "const g = await import('./g.js')",
    "type H = import('./h.js').H",
    "import './side-effect.js'",
    "const notAnImport = require.resolve('./i.js')"
  ].join('\n')
  t.same(specifiers('src/x.ts', source), ['./a.js', './b.js', '../c.js', './e.js', './f.js', './g.js', './h.js', './side-effect.js'])
})

t.test('a package is named without its subpath', async (t) => {
  t.equal(packageOf('undici'), 'undici')
  t.equal(packageOf('@modelcontextprotocol/sdk/client/index.js'), '@modelcontextprotocol/sdk')
  t.equal(packageOf('ajv/dist/2020.js'), 'ajv')
})

t.test('a cycle is reported as its chain, a type-only edge closing it as any other', async (t) => {
  const graph = tree({
    'src/a.ts': "import { b } from './b.js'",
    'src/b.ts': "import { c } from './c.js'",
    'src/c.ts': "import type { A } from './a.js'",
    'src/d.ts': "import { a } from './a.js'",
    'src/self.ts': "import type { S } from './self.js'"
  })
  t.same(cycles(graph), [
    { files: ['src/a.ts', 'src/b.ts', 'src/c.ts'], chain: ['src/a.ts', 'src/b.ts', 'src/c.ts', 'src/a.ts'] },
    { files: ['src/self.ts'], chain: ['src/self.ts', 'src/self.ts'] }
  ])
  t.same(cycles(tree({ 'src/a.ts': "import { b } from './b.js'", 'src/b.ts': '' })), [])
})

t.test('of two cycles through the same files, the shorter chain is reported with every file of them', async (t) => {
  const graph = tree({
    'src/a.ts': "import { b } from './b.js'\nimport { d } from './d.js'",
    'src/b.ts': "import { c } from './c.js'",
    'src/c.ts': "import { a } from './a.js'",
    'src/d.ts': "import { a } from './a.js'"
  })
  t.same(cycles(graph), [{ files: ['src/a.ts', 'src/b.ts', 'src/c.ts', 'src/d.ts'], chain: ['src/a.ts', 'src/d.ts', 'src/a.ts'] }])
})

t.test('a forbidden import is found through the files between, with the shortest chain', async (t) => {
  const graph = tree({
    'src/prepare/x.ts': "import { y } from '../tools/y.js'\nimport { z } from './z.js'",
    'src/prepare/z.ts': "import type { Y } from '../tools/y.js'",
    'src/tools/y.ts': "import type { Dispatcher } from 'undici'\nimport { s } from '../store/s.js'",
    'src/store/s.ts': "import Redis from 'ioredis'"
  })
  t.same(chainTo(graph, 'src/prepare/z.ts', (p) => p === 'undici'), ['src/prepare/z.ts', 'src/tools/y.ts', 'undici'])
  t.same(chainTo(graph, 'src/prepare/x.ts', (p) => p.startsWith('src/store/')), ['src/prepare/x.ts', 'src/tools/y.ts', 'src/store/s.ts'])
  t.equal(chainTo(graph, 'src/store/s.ts', (p) => p === 'undici'), null)
})

t.test('a relative import of a missing file is unresolved', async (t) => {
  const graph = tree({ 'src/a.ts': "import { gone } from './gone.js'\nimport { b } from './b.js'", 'src/b.ts': '' })
  t.same(graph.get('src/a.ts'), { files: ['src/b.ts'], loads: ['src/b.ts'], packages: [], unresolved: ['./gone.js'] })
})

t.test('an import erased by the build is type-only; an import of types by name still loads its module', async (t) => {
  const graph = tree({
    'src/a.ts': "import type { B } from './b.js'\nimport { type C } from './c.js'\nimport { d } from './d.js'\nexport type { E } from './e.js'\ntype F = import('./f.js').F",
    'src/b.ts': '', 'src/c.ts': '', 'src/d.ts': '', 'src/e.ts': '', 'src/f.ts': ''
  })
  t.same(graph.get('src/a.ts')!.files, ['src/b.ts', 'src/c.ts', 'src/d.ts', 'src/e.ts', 'src/f.ts'])
  t.same(graph.get('src/a.ts')!.loads, ['src/c.ts', 'src/d.ts'])
})

t.test('folders are joined by the imports of their files, and a loop between them is a cycle of the folder graph', async (t) => {
  const graph = tree({
    'src/x/a.ts': "import { b } from '../y/b.js'",
    'src/y/b.ts': "import type { C } from '../x/c.js'",
    'src/x/c.ts': "import { a } from './a.js'"
  })
  const folderOf = (p: string): string => p.split('/').slice(0, 2).join('/')
  const all = groupGraph(graph, folderOf)
  t.same(all.get('src/x')!.get('src/y'), ['src/x/a.ts -> src/y/b.ts'])
  t.same(all.get('src/y')!.get('src/x'), ['src/y/b.ts -> src/x/c.ts'])
  t.equal(cycles(asGraph(all)).length, 1, 'a loop, counting types')
  t.equal(cycles(asGraph(groupGraph(graph, folderOf, true))).length, 0, 'no loop of loads: y only names a type of x')
})
