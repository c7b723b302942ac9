/**
 * The loops guard: loop detection (SPEC sections 6 and 15, src/repeat/loops.ts
 * over the registered kinds of src/repeat/kinds/) on the guard seam. Each
 * batch's `LoopDetection` answers the seam's hooks itself: at admission the
 * exact-repeat streak and the kinds that read calls, while the batch runs the
 * kinds that read results, in its final update the streaks it leaves. Its
 * slice of the run: `repeat`, `loops`, and `repeat`/`loops` of `admitted`.
 */
import { LOOP_KIND_LIST } from '../repeat/kinds/index.js'
import { type LoopKinds, LoopDetection, loopStops, resetLoops, splitKinds } from '../repeat/loops.js'
import type { BatchGuard, Guard } from './types.js'

const NAME = 'loops'

/** The loops guard over a list of loop kinds: the registered ones (`loopsGuard`), or a test's. */
export function loopsGuardOf (list: LoopKinds): Guard {
  const kinds = splitKinds(list)
  return {
    name: NAME,
    open: (batch): BatchGuard => new LoopDetection(batch, kinds, NAME),
    reset: (run, cause) => { resetLoops(run, cause, list) },
    stops: loopStops(list)
  }
}

export const loopsGuard: Guard = loopsGuardOf(LOOP_KIND_LIST)
