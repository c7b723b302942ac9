/**
 * The bench's workloads as data: the tools toolgate is given, the random
 * constrained batches of the makespan and safety measures, and the pure
 * arithmetic that judges them (epochs, the lower bound the constraints allow,
 * and a zero-overhead replay of toolgate's scheduling rule).
 *
 * The epoch and key rules are written here again from SPEC section 5 rather
 * than imported, so the bench checks toolgate instead of agreeing with it.
 */
import type { ToolDefinition } from '../src/model/tool.js'

/** Seeded PRNG (mulberry32): the same batches every round and every run. */
export function rng (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const intBetween = (r: () => number, lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1))

/** Scheduling traits of a bench tool, as its definition states them. */
interface Traits { readOnly: boolean, execution: 'auto' | 'parallel' | 'sequential', keyed: boolean }

/** The tools of the makespan and safety measures; each sleeps `arguments.ms` at the executor. */
export const SLEEP_TOOLS: Readonly<Record<string, Traits>> = {
  m_read: { readOnly: true, execution: 'auto', keyed: false },
  m_read_k: { readOnly: true, execution: 'auto', keyed: true },
  m_write_p: { readOnly: false, execution: 'parallel', keyed: true },
  m_write_b: { readOnly: false, execution: 'auto', keyed: true },
  m_seq: { readOnly: true, execution: 'sequential', keyed: false },
  s_read: { readOnly: true, execution: 'auto', keyed: false },
  s_write: { readOnly: false, execution: 'parallel', keyed: true },
  // The same executor route as s_write, without the key: what a framework that ignores keys does.
  s_write_open: { readOnly: false, execution: 'parallel', keyed: false }
}

const SLEEP_SCHEMA = {
  type: 'object',
  properties: { ms: { type: 'integer', minimum: 0, maximum: 10_000 }, key: { type: 'string' }, n: { type: 'integer' } },
  required: ['ms'],
  additionalProperties: false
}

/** Every tool registered in toolgate for the bench, pointing at the bench executor. */
export function benchTools (executorUrl: string): ToolDefinition[] {
  const look: ToolDefinition = {
    name: 'look',
    description: 'Describe the tile at (x, y).',
    inputSchema: { type: 'object', properties: { x: { type: 'integer' }, y: { type: 'integer' } }, required: ['x', 'y'], additionalProperties: false },
    executor: { url: `${executorUrl}/tools/look`, timeoutMs: 5000 },
    readOnly: true
  }
  const sleepers = Object.entries(SLEEP_TOOLS).map(([name, t]): ToolDefinition => ({
    name,
    description: `Sleeps arguments.ms at the executor (${name}).`,
    inputSchema: SLEEP_SCHEMA,
    executor: { url: `${executorUrl}/tools/${name === 's_write_open' ? 's_write' : name}`, timeoutMs: 10_000 },
    readOnly: t.readOnly,
    execution: t.execution,
    ...(t.keyed ? { conflictKey: 'k:{/key}' } : {})
  }))
  // s_write with its key held across the tenant's runs (the store-path rows, bench/store-paths.ts).
  const tenantWrite: ToolDefinition = { ...sleepers.find((t) => t.name === 's_write')!, name: 's_write_tenant', description: 'Sleeps arguments.ms at the executor (s_write, its key tenant-scoped).', conflictScope: 'tenant' }
  return [look, ...sleepers, tenantWrite]
}

/** One call of a sleeping batch. */
export interface SleepCall { tool: string, ms: number, key?: string }

/** A batch and the cap of the run it is sent in. */
export interface SleepBatch { cap: number, calls: SleepCall[] }

/** Random constrained batches: mixed reads and writes, conflict keys, barriers and caps. */
export function makespanBatches (count: number, seed: number, maxMs: number): SleepBatch[] {
  const r = rng(seed)
  const mix: Array<[string, number]> = [['m_read', 0.45], ['m_read_k', 0.15], ['m_write_p', 0.22], ['m_write_b', 0.1], ['m_seq', 0.08]]
  const out: SleepBatch[] = []
  for (let b = 0; b < count; b++) {
    const cap = [1, 2, 3, 4, 8][intBetween(r, 0, 4)]!
    const calls: SleepCall[] = []
    const size = intBetween(r, 3, 16)
    for (let i = 0; i < size; i++) {
      let pick = r()
      let tool = mix[0]![0]
      for (const [name, p] of mix) {
        if (pick < p) { tool = name; break }
        pick -= p
      }
      const ms = intBetween(r, Math.ceil(maxMs / 8), maxMs)
      calls.push(SLEEP_TOOLS[tool]!.keyed ? { tool, ms, key: 'abc'[intBetween(r, 0, 2)]! } : { tool, ms })
    }
    out.push({ cap, calls })
  }
  return out
}

/**
 * Read-heavy batches: 80% reads without keys, 20% keyed writes over a few
 * keys, so same-key writes are common. The cap is the batch size: the
 * all-parallel reference runs every call at once, as frameworks do.
 */
export function safetyBatches (count: number, seed: number, size: number, maxMs: number, keys: number): SleepBatch[] {
  const r = rng(seed)
  const out: SleepBatch[] = []
  for (let b = 0; b < count; b++) {
    const calls: SleepCall[] = []
    for (let i = 0; i < size; i++) {
      const ms = intBetween(r, Math.ceil(maxMs / 8), maxMs)
      calls.push(r() < 0.8 ? { tool: 's_read', ms } : { tool: 's_write', ms, key: `key${intBetween(r, 1, keys)}` })
    }
    out.push({ cap: size, calls })
  }
  return out
}

/** The same batch as a framework that ignores keys would run it. */
export function withoutKeys (batch: SleepBatch): SleepBatch {
  return { cap: batch.cap, calls: batch.calls.map((c) => (c.tool === 's_write' ? { ...c, tool: 's_write_open' } : c)) }
}

type Mode = 'safeParallel' | 'parallel'

function eligible (t: Traits, mode: Mode): boolean {
  if (t.execution === 'sequential') return false
  return mode === 'parallel' || t.readOnly || t.execution === 'parallel'
}

/** Epochs per SPEC section 5: consecutive eligible calls share one, every other call is alone. */
export function epochsOf (calls: readonly SleepCall[], mode: Mode): SleepCall[][] {
  const epochs: SleepCall[][] = []
  let open: SleepCall[] | null = null
  for (const c of calls) {
    if (eligible(SLEEP_TOOLS[c.tool]!, mode)) {
      if (open === null) epochs.push(open = [])
      open.push(c)
    } else {
      open = null
      epochs.push([c])
    }
  }
  return epochs
}

const keyOf = (c: SleepCall): string | null => (SLEEP_TOOLS[c.tool]!.keyed && c.key !== undefined ? c.key : null)

/**
 * The least time any schedule obeying the constraints could take, with each
 * call lasting its sleep plus `overheadMs`: epochs run one after another, and
 * an epoch lasts at least its longest call, its longest same-key chain, and
 * its total work spread over the cap.
 */
export function lowerBound (batch: SleepBatch, mode: Mode, overheadMs: number): number {
  let total = 0
  for (const epoch of epochsOf(batch.calls, mode)) {
    let longest = 0
    let work = 0
    const chains = new Map<string, number>()
    for (const c of epoch) {
      const d = c.ms + overheadMs
      longest = Math.max(longest, d)
      work += d
      const k = keyOf(c)
      if (k !== null) chains.set(k, (chains.get(k) ?? 0) + d)
    }
    total += Math.max(longest, work / batch.cap, ...chains.values())
  }
  return total
}

/**
 * toolgate's rule replayed with no overhead: inside an epoch, whenever a slot
 * is free, start the first pending call (source order) whose key no running
 * call holds. Shows how far the rule itself is from the bound.
 */
export function greedyMakespan (batch: SleepBatch, mode: Mode, overheadMs: number): number {
  let total = 0
  for (const epoch of epochsOf(batch.calls, mode)) {
    const pending = [...epoch]
    const running: Array<{ end: number, key: string | null }> = []
    let now = 0
    const fill = (): void => {
      const held = new Set(running.map((r) => r.key).filter((k) => k !== null))
      for (let i = 0; i < pending.length && running.length < batch.cap;) {
        const c = pending[i]!
        const k = keyOf(c)
        if (k !== null && held.has(k)) { i++; continue }
        pending.splice(i, 1)
        if (k !== null) held.add(k)
        running.push({ end: now + c.ms + overheadMs, key: k })
      }
    }
    fill()
    while (running.length > 0) {
      running.sort((a, b) => a.end - b.end)
      now = running.shift()!.end
      fill()
    }
    total += now
  }
  return total
}
