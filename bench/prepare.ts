/**
 * Preparation CPU per call, from an in-process loop over toolgate's compiled
 * pipeline: every stage (parse, aliases, coercion, validation, rewrite and
 * revalidation, allow-list and scopes, conflict key) plus the exact-repeat
 * fingerprint, as the batch engine runs them for each call.
 *
 * The reference, measured in the same loop: the least any preparation must
 * do, which is to parse a string, validate with the same compiled Ajv schema
 * and hash the canonical form with SHA-256.
 */
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import canonicalizeModule from 'canonicalize'
import { prepareCall } from '../src/prepare/pipeline.js'
import type { AuthorizationContext } from '../src/prepare/types.js'
import type { RawCall } from '../src/model/call.js'
import { fingerprint } from '../src/repeat/exact.js'
import { ToolRegistry } from '../src/tools/registry.js'
import { median } from './stats.js'

type Serialize = (input: unknown) => string | undefined
// CommonJS under NodeNext: Node hands over the function, the typings say `{ default }` (see src/repeat/exact.ts).
const canonicalizeExport = canonicalizeModule as unknown as Serialize | { default: Serialize }
const canonicalize: Serialize = typeof canonicalizeExport === 'function' ? canonicalizeExport : canonicalizeExport.default

export interface PrepCase {
  name: string
  /** µs of CPU per call: toolgate's preparation + fingerprint. */
  toolgateUs: number
  /** µs of CPU per call: parse + Ajv validation + canonical SHA-256. */
  referenceUs: number
}

const VARIANTS = 512

/** The example tools file's `paint` (validation, two clamp rewrites, revalidation, conflict key) and `look` (validation only). */
function inputs (tool: 'paint' | 'look', form: 'string' | 'object'): RawCall[] {
  const calls: RawCall[] = []
  for (let i = 0; i < VARIANTS; i++) {
    const args = tool === 'paint' ? { x: i % 300, y: (i * 7) % 300, color: ['red', 'green', 'blue'][i % 3] } : { x: i % 251, y: (i * 7) % 251 }
    calls.push({ id: `call_${i}`, name: tool, arguments: form === 'string' ? JSON.stringify(args) : args })
  }
  return calls
}

function cpuUs (): number {
  const u = process.cpuUsage()
  return u.user + u.system
}

/** Runs `fn` over the inputs `iterations` times; CPU µs per iteration. */
function timeLoop (calls: readonly RawCall[], iterations: number, fn: (call: RawCall) => unknown): number {
  let sink = 0
  const t0 = cpuUs()
  for (let i = 0; i < iterations; i++) if (fn(calls[i % calls.length]!) !== undefined) sink++
  const us = (cpuUs() - t0) / iterations
  if (sink < 0) throw new Error('unreachable')
  return us
}

export async function measurePreparation (examplesToolsFile: string, iterations: number, rounds: number): Promise<PrepCase[]> {
  const doc = JSON.parse(await readFile(examplesToolsFile, 'utf8')) as { tools: unknown[] }
  const registry = new ToolRegistry({ allowedOrigins: null })
  registry.putAll(doc.tools)
  const ctx: AuthorizationContext = { runId: 'run_bench', tenant: 'bench', allowedTools: null, scopes: new Set(['*']) }

  const cases = (['paint', 'look'] as const).flatMap((tool) => (['string', 'object'] as const).map((form) => ({ tool, form, calls: inputs(tool, form) })))
  const samples = new Map<string, { toolgate: number[], reference: number[] }>()
  // Round 0 warms the JIT and is not kept.
  for (let round = 0; round <= rounds; round++) {
    for (const c of cases) {
      const tool = registry.resolve(c.tool)!
      const toolgate = timeLoop(c.calls, iterations, (call) => {
        const o = prepareCall(call, 0, registry, ctx)
        if (o instanceof Promise) throw new Error('bench input was validated on the validation thread')
        if (!o.ok) throw new Error(`bench input was rejected: ${o.reason}`)
        return fingerprint(o.tool?.name ?? o.requestedName, o.arguments ?? null)
      })
      const reference = timeLoop(c.calls, iterations, (call) => {
        const args = typeof call.arguments === 'string' ? JSON.parse(call.arguments) as unknown : call.arguments
        const verdict = tool.validate(args)
        if (verdict instanceof Promise || !verdict.valid) throw new Error('bench input does not validate')
        return createHash('sha256').update(canonicalize([tool.name, args])!).digest('hex')
      })
      if (round === 0) continue
      const key = `${c.tool} (${c.form} arguments)`
      const s = samples.get(key) ?? { toolgate: [], reference: [] }
      s.toolgate.push(toolgate)
      s.reference.push(reference)
      samples.set(key, s)
    }
  }
  return [...samples].map(([name, s]) => ({ name, toolgateUs: median(s.toolgate), referenceUs: median(s.reference) }))
}
