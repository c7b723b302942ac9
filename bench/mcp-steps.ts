/**
 * Where one `/mcp` call's time goes inside toolgate, step by step: one
 * `tools/call` at a time through toolgate's `/mcp` to an upstream MCP server,
 * each step timed in toolgate's process by bench/mcp-steps-probe.ts from
 * Node's and undici's diagnostics channels, the medians printed.
 *
 *   node dist/bench/mcp-steps.js [--calls 3000] [--warmup 1500] [--pin] [--json]
 *
 * The steps: toolgate's work from the request's start to the upstream
 * request (HTTP, the MCP server, the one-call batch, the MCP client), the
 * upstream request written, the upstream's answer's head and its end, and
 * toolgate's work from there to its answer finished. Beside them, the p50 of
 * calls sent to the upstream directly and through toolgate, and toolgate's CPU
 * time per call. With --pin (Linux, taskset) toolgate gets core 1 and
 * everything else core 0.
 */
import { realpathSync } from 'node:fs'
import { extname } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { killAll, pin, trapSignals } from './children.js'
import { type Side, startSide, timed } from './compare-mcp.js'
import { MARKS, type StepsAnswer } from './mcp-steps-probe.js'
import { integerOption } from './options.js'
import { percentile } from './stats.js'

const PROBE = fileURLToPath(new URL(`./mcp-steps-probe${extname(fileURLToPath(import.meta.url))}`, import.meta.url))

export interface McpStepsOptions { calls: number, warmup: number, pin: boolean }

export interface McpSteps {
  options: McpStepsOptions
  /** Calls timed whole by the probe (every mark seen). */
  timed: number
  /** Each step's median, µs, in the order of MARKS (from one mark to the next). */
  steps: Array<{ from: string, to: string, medianUs: number }>
  /** The median of a call's time from its first mark to its last, µs. */
  insideUs: number
  p50DirectMs: number
  p50ThroughMs: number
  /** toolgate's CPU time per call, µs. */
  cpuUsPerCall: number
}

export async function mcpSteps (opts: McpStepsOptions): Promise<McpSteps> {
  trapSignals()
  let side: Side | undefined
  try {
    // This build's own tree (dist/, or the tests' build of it), its toolgate with the probe preloaded.
    side = await startSide(fileURLToPath(new URL('..', import.meta.url)), ['--import', PROBE])
    const { upstream, toolgate, direct, through } = side
    if (opts.pin) {
      pin(process.pid, '0')
      pin(upstream.pid, '0')
      pin(toolgate.pid, '1')
    }
    await timed(direct, opts.warmup)
    await timed(through, opts.warmup)
    const p50DirectMs = percentile(await timed(direct, Math.max(1, Math.round(opts.calls / 3))), 50)
    await toolgate.probe<StepsAnswer>()
    const cpu0 = (await toolgate.cpu()).cpuUs
    const p50ThroughMs = percentile(await timed(through, opts.calls), 50)
    const cpuUsPerCall = ((await toolgate.cpu()).cpuUs - cpu0) / opts.calls
    const { calls } = await toolgate.probe<StepsAnswer>()
    if (calls.length === 0) throw new Error('toolgate timed no call whole: the probe saw no upstream request during a /mcp request')
    const medianUs = (f: (c: number[]) => number): number => Math.round(percentile(calls.map(f), 50) * 1000)
    const steps = MARKS.slice(1).map((to, i) => ({ from: MARKS[i]!, to, medianUs: medianUs((c) => c[i]! - (i === 0 ? 0 : c[i - 1]!)) }))
    return { options: opts, timed: calls.length, steps, insideUs: medianUs((c) => c.at(-1)!), p50DirectMs, p50ThroughMs, cpuUsPerCall }
  } finally {
    await side?.toolgate.stop()
    await side?.upstream.stop()
    await killAll()
  }
}

/** What each step holds, by the mark it ends at. */
const HOLDS: Record<string, string> = {
  'upstream created': 'toolgate: HTTP in, the MCP server, the one-call batch up to its dispatch, the MCP client',
  'upstream written': 'the upstream request written (undici, the system call)',
  'upstream head': "the upstream's answer, as toolgate waits for it",
  'upstream end': "the answer's head taken (toolgate's Response made) and the rest of its body in",
  out: 'toolgate: the answer read, the batch answered, the MCP answer written'
}

export function mcpStepsMarkdown (r: McpSteps): string {
  const o = r.options
  return [
    `One \`tools/call\` at a time through \`/mcp\`, ${o.calls} calls (${r.timed} timed whole by the probe)${o.pin ? ', toolgate pinned to core 1' : ''}; medians in toolgate's process.`,
    '',
    '| step | what it holds | µs |',
    '| --- | --- | ---: |',
    ...r.steps.map((s) => `| ${s.from} → ${s.to} | ${HOLDS[s.to] ?? ''} | ${s.medianUs} |`),
    `| ${MARKS[0]} → ${MARKS.at(-1)!} | the call inside toolgate's marks | ${r.insideUs} |`,
    '',
    `p50 through toolgate ${r.p50ThroughMs.toFixed(3)} ms, directly to the upstream ${r.p50DirectMs.toFixed(3)} ms (added ${(r.p50ThroughMs - r.p50DirectMs).toFixed(3)} ms); toolgate's CPU per call ${Math.round(r.cpuUsPerCall)} µs.`
  ].join('\n')
}

async function main (): Promise<void> {
  const { values } = parseArgs({
    options: {
      calls: { type: 'string', default: '3000' },
      warmup: { type: 'string', default: '1500' },
      pin: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false }
    }
  })
  const r = await mcpSteps({ calls: integerOption('calls', values.calls, 1), warmup: integerOption('warmup', values.warmup, 0), pin: values.pin })
  process.stdout.write((values.json ? JSON.stringify(r, null, 2) : mcpStepsMarkdown(r)) + '\n')
}

// Node resolves symlinks in a module's URL but not in argv[1]: compare real paths, or a linked checkout would run nothing.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) await main()
