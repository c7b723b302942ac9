import type { RunRecord } from '../model/run.js'

/** The run object as the API answers it (SPEC section 3). */
export interface RunView {
  runId: string
  state: RunRecord['state']
  terminationReason?: string
  toolExecution: string
  maxConcurrentTools: number
  limits: RunRecord['options']['limits']
  tools: readonly string[] | null
  events: string
  metadata: Readonly<Record<string, string>>
  counters: RunRecord['counters']
  createdAt: string
  lastActiveAt: string
  expiresAt: string
}

export function runView (run: RunRecord, ttlMs: number): RunView {
  const o = run.options
  const view: RunView = {
    runId: run.runId,
    state: run.state,
    toolExecution: o.toolExecution,
    maxConcurrentTools: o.maxConcurrentTools,
    limits: o.limits,
    tools: o.tools,
    events: o.events,
    metadata: o.metadata,
    counters: { ...run.counters },
    createdAt: new Date(run.createdAt).toISOString(),
    lastActiveAt: new Date(run.lastActiveAt).toISOString(),
    expiresAt: new Date(run.lastActiveAt + ttlMs).toISOString()
  }
  if (run.terminationReason !== null) view.terminationReason = run.terminationReason
  return view
}
