import type { CreateRunInput } from '../../schemas/run.js'
import type { RunLimits, RunOptions } from './types.js'

export const DEFAULT_ADVISORY_THRESHOLD = 3
export const DEFAULT_TERMINATION_THRESHOLD = 8

const DEFAULT_LIMITS: RunLimits = Object.freeze({
  exactToolRepeatAdvisoryThreshold: DEFAULT_ADVISORY_THRESHOLD,
  exactToolRepeatTerminationThreshold: DEFAULT_TERMINATION_THRESHOLD,
  maxTurns: null,
  maxToolCalls: null,
  timeoutMs: null,
  maxTotalTokens: null
})
const NO_METADATA = Object.freeze({})

/**
 * Compiles a run request into its effective options, every default filled.
 * Defaults are shared frozen objects, so an idle run with default options
 * costs almost nothing.
 */
export function resolveRunOptions (input: CreateRunInput, maxConcurrentDefault: number): RunOptions {
  const limits = input.limits === undefined || Object.keys(input.limits).length === 0
    ? DEFAULT_LIMITS
    : Object.freeze({ ...DEFAULT_LIMITS, ...input.limits })
  return Object.freeze({
    toolExecution: input.toolExecution ?? 'safeParallel',
    maxConcurrentTools: input.maxConcurrentTools ?? maxConcurrentDefault,
    limits,
    tools: input.tools === undefined || input.tools === null ? null : Object.freeze([...input.tools]),
    events: input.events ?? 'stock',
    metadata: input.metadata === undefined || Object.keys(input.metadata).length === 0 ? NO_METADATA : Object.freeze({ ...input.metadata })
  })
}
