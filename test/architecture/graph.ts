/**
 * The import graph of toolgate's source, read with the TypeScript parser:
 * every `import`, `import type`, `export ... from`, `import()` and
 * `import('...')` type names an edge, type-only ones included (a type
 * import is a dependency the layout has to explain as much as a value one).
 */
import { existsSync } from 'node:fs'
import { posix } from 'node:path'
import ts from 'typescript'

/** What one file imports: files of the tree (by path from the root) and packages (by name). */
export interface FileImports {
  files: string[]
  /** The files of `files` it loads when it runs (imported for more than types). */
  loads: string[]
  packages: string[]
  /** Relative specifiers that name no file of the tree. */
  unresolved: string[]
}

/** A module specifier a source text names, and whether only types come through it (erased when compiled). */
export interface Specifier {
  text: string
  typeOnly: boolean
}

/** Every module specifier a source text names. */
export function specifiers (path: string, source: string): string[] {
  return namedModules(path, source).map((s) => s.text)
}

/**
 * Every module specifier a source text names, each marked type-only when
 * compiling erases it: `import type`, `export type ... from` and
 * `import('...')` types. `import { type A }` still loads its module (the
 * build keeps it, as `verbatimModuleSyntax` says), so it is not.
 */
export function namedModules (path: string, source: string): Specifier[] {
  const file = ts.createSourceFile(path, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS)
  const found: Specifier[] = []
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ text: node.moduleSpecifier.text, typeOnly: node.importClause?.isTypeOnly === true })
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ text: node.moduleSpecifier.text, typeOnly: node.isTypeOnly })
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ text: node.argument.literal.text, typeOnly: true })
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] !== undefined && ts.isStringLiteralLike(node.arguments[0])) {
      found.push({ text: node.arguments[0].text, typeOnly: false })
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
      found.push({ text: node.moduleReference.expression.text, typeOnly: node.isTypeOnly })
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return found
}

/** The package a bare specifier names: `@scope/name` or `name`, without a subpath. */
export function packageOf (specifier: string): string {
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!
}

/**
 * The imports of one file. `exists` says whether a path (from the root) is
 * a file of the tree; a `.js` specifier names the `.ts` file it compiles from.
 */
export function importsOf (path: string, source: string, exists: (path: string) => boolean): FileImports {
  const result: FileImports = { files: [], loads: [], packages: [], unresolved: [] }
  for (const { text: s, typeOnly } of namedModules(path, source)) {
    if (s.startsWith('node:')) continue
    if (!s.startsWith('.')) {
      result.packages.push(packageOf(s))
      continue
    }
    const joined = posix.normalize(posix.join(posix.dirname(path), s))
    const target = [joined.replace(/\.js$/, '.ts'), joined, `${joined}.ts`, `${joined}/index.ts`].find(exists)
    if (target === undefined) result.unresolved.push(s)
    else {
      result.files.push(target)
      if (!typeOnly && !result.loads.includes(target)) result.loads.push(target)
    }
  }
  return result
}

/** A graph of files: each file's imports, by path from the root. */
export type Graph = ReadonlyMap<string, FileImports>

/** Builds the graph of the given sources. */
export function buildGraph (sources: ReadonlyMap<string, string>, exists: (path: string) => boolean = (p) => sources.has(p)): Graph {
  const graph = new Map<string, FileImports>()
  for (const [path, source] of sources) graph.set(path, importsOf(path, source, exists))
  return graph
}

/** A checker of whether a path under `root` exists on disk. */
export function onDisk (root: string): (path: string) => boolean {
  return (path) => path.endsWith('.ts') && existsSync(posix.join(root, path))
}

/**
 * The import cycles of the graph: one per strongly connected component of
 * more than one file (or a file importing itself), with the component's
 * files and its shortest chain through the first of them, which starts and
 * ends at that file (`a -> b -> a`). Files outside the graph (imported but
 * not scanned) take no part.
 */
export function cycles (graph: Graph): Array<{ files: string[], chain: string[] }> {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const components: string[][] = []
  let next = 0
  const edges = (f: string): string[] => (graph.get(f)?.files ?? []).filter((g) => graph.has(g))
  // Tarjan's algorithm, recursive: the graph is a few hundred files deep at most.
  const connect = (v: string): void => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    onStack.add(v)
    for (const w of edges(v)) {
      if (!index.has(w)) {
        connect(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!))
      }
    }
    if (low.get(v) !== index.get(v)) return
    const component: string[] = []
    let w: string
    do {
      w = stack.pop()!
      onStack.delete(w)
      component.push(w)
    } while (w !== v)
    if (component.length > 1 || edges(v).includes(v)) components.push(component.sort())
  }
  for (const f of [...graph.keys()].sort()) if (!index.has(f)) connect(f)
  return components.map((files) => ({ files, chain: shortestCycle(files[0]!, new Set(files), edges) }))
}

/** The shortest chain from `start` back to itself inside one component (breadth first). */
function shortestCycle (start: string, inside: ReadonlySet<string>, edges: (f: string) => string[]): string[] {
  const previous = new Map<string, string>()
  const queue = [start]
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i]!
    for (const w of edges(v)) {
      if (!inside.has(w)) continue
      if (w === start) {
        const chain: string[] = []
        for (let at: string | undefined = v; at !== undefined; at = previous.get(at)) chain.unshift(at)
        return [...chain, start]
      }
      if (!previous.has(w)) {
        previous.set(w, v)
        queue.push(w)
      }
    }
  }
  throw new Error(`${start} is on no cycle`)
}

/**
 * The shortest import chain from `from` to a file or package that `forbidden`
 * matches, following the graph's files: `[from, ..., forbidden]`, or null
 * when none is reachable.
 */
export function chainTo (graph: Graph, from: string, forbidden: (target: string) => boolean): string[] | null {
  const previous = new Map<string, string | null>([[from, null]])
  const queue = [from]
  const chain = (end: string, via: string): string[] => {
    const path = [end]
    for (let at: string | null = via; at !== null; at = previous.get(at) ?? null) path.unshift(at)
    return path
  }
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i]!
    const imports = graph.get(v)
    if (imports === undefined) continue
    for (const p of imports.packages) if (forbidden(p)) return chain(p, v)
    for (const w of imports.files) {
      if (forbidden(w)) return chain(w, v)
      if (!previous.has(w)) {
        previous.set(w, v)
        queue.push(w)
      }
    }
  }
  return null
}

/**
 * The graph between groups of files (folders): one node per group, an edge
 * wherever a file of one imports a file of another, with the file imports
 * behind it. `groupOf` names a file's group, or null to leave it out;
 * `loadsOnly` keeps only the imports a file loads when it runs.
 */
export function groupGraph (graph: Graph, groupOf: (path: string) => string | null, loadsOnly = false): Map<string, Map<string, string[]>> {
  const groups = new Map<string, Map<string, string[]>>()
  for (const [path, imports] of graph) {
    const from = groupOf(path)
    if (from === null) continue
    const out = groups.get(from) ?? new Map<string, string[]>()
    groups.set(from, out)
    for (const target of loadsOnly ? imports.loads : imports.files) {
      const to = groupOf(target)
      if (to === null || to === from || !graph.has(target)) continue
      out.set(to, [...(out.get(to) ?? []), `${path} -> ${target}`])
    }
  }
  return groups
}

/** A group graph as a graph `cycles` reads: each group a node importing the groups it has edges to. */
export function asGraph (groups: ReadonlyMap<string, ReadonlyMap<string, string[]>>): Graph {
  return new Map([...groups].map(([g, out]) => [g, { files: [...out.keys()], loads: [...out.keys()], packages: [], unresolved: [] }]))
}
