import type { CreateRunInput } from '../../schemas/run.js'
import { LOOP_KIND_LIST } from '../repeat/kinds/index.js'
import { defaultLoopLimits } from '../repeat/loops.js'
import type { LoopLimits } from '../model/loops.js'
import type { RunLimits, RunOptions } from '../model/run.js'

const DEFAULT_ADVISORY_THRESHOLD = 3
const DEFAULT_TERMINATION_THRESHOLD = 8

/** The registered kinds' default limits. */
const DEFAULT_LOOP_LIMITS: LoopLimits = defaultLoopLimits(LOOP_KIND_LIST)
const DEFAULT_LIMITS: RunLimits = limitsWith(DEFAULT_LOOP_LIMITS)
/** The default limits for each set of server loop defaults (one per process in practice). */
const defaultsByLoopLimits = new WeakMap<LoopLimits, RunLimits>([[DEFAULT_LOOP_LIMITS, DEFAULT_LIMITS]])

function limitsWith (loops: LoopLimits): RunLimits {
  return Object.freeze({
    exactToolRepeatAdvisoryThreshold: DEFAULT_ADVISORY_THRESHOLD,
    exactToolRepeatTerminationThreshold: DEFAULT_TERMINATION_THRESHOLD,
    maxTurns: null,
    maxToolCalls: null,
    timeoutMs: null,
    maxTotalTokens: null,
    // Each loop kind's limits, in the registered kinds' order.
    ...loops
  })
}
const NO_METADATA = Object.freeze({})

/**
 * Compiles a run request into its effective options, every default filled;
 * `loopDefaults` are the server's defaults of the loop limits (SPEC section 15).
 * Defaults are shared frozen objects, so an idle run with default options
 * costs almost nothing.
 */
export function resolveRunOptions (input: CreateRunInput, maxConcurrentDefault: number, loopDefaults: LoopLimits = DEFAULT_LOOP_LIMITS): RunOptions {
  let defaults = defaultsByLoopLimits.get(loopDefaults)
  if (defaults === undefined) defaultsByLoopLimits.set(loopDefaults, (defaults = limitsWith(loopDefaults)))
  const limits = input.limits === undefined || Object.keys(input.limits).length === 0
    ? defaults
    // The body's limits are decoded JSON: a limit given is a number or null, never undefined.
    : Object.freeze({ ...defaults, ...input.limits }) as RunLimits
  return Object.freeze({
    toolExecution: input.toolExecution ?? 'safeParallel',
    maxConcurrentTools: input.maxConcurrentTools ?? maxConcurrentDefault,
    limits,
    tools: input.tools === undefined || input.tools === null ? null : Object.freeze([...input.tools]),
    events: input.events ?? 'stock',
    metadata: input.metadata === undefined || Object.keys(input.metadata).length === 0 ? NO_METADATA : Object.freeze({ ...input.metadata })
  })
}
