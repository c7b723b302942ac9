import type { Epoch, SchedulableCall } from './types.js'
import type { ToolExecutionMode } from '../model/run.js'

/** Whether a call may share an epoch with its neighbours (SPEC section 5, "Epochs"). */
export function isEligibleToOverlap (call: Pick<SchedulableCall, 'readOnly' | 'execution'>, mode: ToolExecutionMode): boolean {
  switch (mode) {
    case 'sequential': return false
    case 'safeParallel': return call.execution !== 'sequential' && (call.readOnly || call.execution === 'parallel')
    case 'parallel': return call.execution !== 'sequential'
  }
}

/**
 * Groups prepared calls into epochs: consecutive eligible calls form one
 * epoch, every other call is a barrier alone. Input and output are in source
 * order; rejected calls are simply not passed in.
 */
export function planEpochs (calls: readonly SchedulableCall[], mode: ToolExecutionMode): Epoch[] {
  const epochs: Epoch[] = []
  let open: SchedulableCall[] | null = null
  for (const call of calls) {
    if (isEligibleToOverlap(call, mode)) {
      if (open === null) epochs.push(open = [])
      open.push(call)
    } else {
      open = null
      epochs.push([call])
    }
  }
  return epochs
}
