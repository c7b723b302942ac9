/**
 * Reads a V8 .cpuprofile (node --cpu-prof) and says where the time went:
 * self time by package (toolgate's own code, fastify, undici, pino, node
 * internals, GC, idle), and toolgate's own functions by self and by
 * inclusive time, located in the TypeScript sources through the source maps.
 * Only samples inside [fromUs, toUs] (process.hrtime µs, the clock V8
 * stamps samples with) count, so start-up and warm-up stay out.
 */
import { readFileSync } from 'node:fs'
import { SourceMap } from 'node:module'
import { relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

interface CallFrame { functionName: string, url: string, lineNumber: number, columnNumber: number }
interface ProfileNode { id: number, callFrame: CallFrame, children?: number[] }
interface CpuProfile { nodes: ProfileNode[], startTime: number, samples: number[], timeDeltas: number[] }

export interface ProfileLine { name: string, ms: number, share: number }
export interface ProfileSummary {
  sampledMs: number
  /** Self time by where the code lives. */
  byPackage: ProfileLine[]
  /** toolgate's functions by self time. */
  ownSelf: ProfileLine[]
  /** toolgate's (and the bench's own, for the floor) source files by self time. */
  ownFiles: ProfileLine[]
  /** toolgate's functions by inclusive time (itself and what it calls). */
  ownInclusive: ProfileLine[]
  /** Packages by inclusive time: samples with any of its frames on the stack. */
  packageInclusive: ProfileLine[]
  /** Every function by self time, whatever package. */
  allSelf: ProfileLine[]
}

function packageOf (frame: CallFrame, root: string): string {
  const { url, functionName } = frame
  if (url === '') return functionName === '(garbage collector)' ? 'gc' : functionName === '(idle)' ? 'idle' : functionName === '(program)' ? 'program (native)' : `native ${functionName}`
  if (url.startsWith('node:')) return 'node internals'
  const path = url.startsWith('file:') ? fileURLToPath(url) : url
  // The project's own files first: a build may itself live under a node_modules (the bench's smoke test builds one there).
  const rel = relative(root, path)
  if (!rel.startsWith('..') && !rel.startsWith(`node_modules${sep}`)) {
    if (/^(dist[\\/])?(src|routes|schemas)[\\/]/.test(rel)) return 'toolgate'
    if (/^(dist[\\/])?bench[\\/]/.test(rel)) return 'bench'
  }
  const nm = path.lastIndexOf(`${sep}node_modules${sep}`)
  if (nm >= 0) {
    const parts = path.slice(nm + 14).split(sep)
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!
  }
  return 'other'
}

export function summarizeProfile (file: string, root: string, fromUs = -Infinity, toUs = Infinity, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

  const maps = new Map<string, SourceMap | null>()
  const label = (frame: CallFrame): string => {
    const path = frame.url.startsWith('file:') ? fileURLToPath(frame.url) : frame.url
    let where = `${relative(root, path)}:${frame.lineNumber + 1}`
    if (!maps.has(path)) {
      try { maps.set(path, new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8')) as never)) } catch { maps.set(path, null) }
    }
    const entry = maps.get(path)?.findEntry(frame.lineNumber, frame.columnNumber) as { originalSource?: string, originalLine?: number } | undefined
    if (entry?.originalSource !== undefined && entry.originalLine !== undefined) {
      const source = entry.originalSource.startsWith('file:') ? fileURLToPath(entry.originalSource) : entry.originalSource
      where = `${relative(root, source.startsWith('/') ? source : `${path}/../${source}`)}:${entry.originalLine + 1}`
    }
    return `${frame.functionName === '' ? '(anonymous)' : frame.functionName} ${where}`
  }

  const pkgSelf = new Map<string, number>()
  const ownSelf = new Map<string, number>()
  const ownFiles = new Map<string, number>()
  const ownIncl = new Map<string, number>()
  const pkgIncl = new Map<string, number>()
  const allSelf = new Map<string, number>()
  const isOwn = new Map<number, string | null>()
  const ownLabel = (node: ProfileNode): string | null => {
    let l = isOwn.get(node.id)
    if (l === undefined) isOwn.set(node.id, l = packageOf(node.callFrame, root) === 'toolgate' ? label(node.callFrame) : null)
    return l
  }

  let t = profile.startTime
  let sampled = 0
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!
    const dt = profile.timeDeltas[i + 1] ?? 0
    if (t < fromUs || t > toUs) continue
    const node = byId.get(profile.samples[i]!)!
    sampled += dt
    const pkg = packageOf(node.callFrame, root)
    pkgSelf.set(pkg, (pkgSelf.get(pkg) ?? 0) + dt)
    const own = ownLabel(node)
    if (own !== null) ownSelf.set(own, (ownSelf.get(own) ?? 0) + dt)
    if (own !== null || pkg === 'bench') {
      // The label ends with the source's path and line; a function's name may hold spaces, a path does not.
      const file = (own ?? label(node.callFrame)).split(' ').at(-1)!.replace(/:\d+$/, '')
      ownFiles.set(file, (ownFiles.get(file) ?? 0) + dt)
    }
    const any = `${label(node.callFrame)} [${pkg}]`
    allSelf.set(any, (allSelf.get(any) ?? 0) + dt)
    const seen = new Set<string>()
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!
      const l = ownLabel(frame)
      if (l !== null && !seen.has(l)) {
        seen.add(l)
        ownIncl.set(l, (ownIncl.get(l) ?? 0) + dt)
      }
      const p = `pkg:${packageOf(frame.callFrame, root)}`
      if (!seen.has(p)) {
        seen.add(p)
        pkgIncl.set(p.slice(4), (pkgIncl.get(p.slice(4)) ?? 0) + dt)
      }
    }
  }
  const lines = (m: Map<string, number>, n: number): ProfileLine[] => [...m]
    .sort((a, b) => b[1] - a[1]).slice(0, n)
    .map(([name, us]) => ({ name, ms: Math.round(us / 100) / 10, share: sampled > 0 ? Math.round((us / sampled) * 1000) / 1000 : 0 }))
  return {
    sampledMs: Math.round(sampled / 1000),
    byPackage: lines(pkgSelf, 20),
    ownSelf: lines(ownSelf, top),
    ownFiles: lines(ownFiles, 40),
    ownInclusive: lines(ownIncl, top),
    packageInclusive: lines(pkgIncl, 20),
    allSelf: lines(allSelf, top)
  }
}
