/**
 * The registered loop kinds beyond exact repeats (SPEC section 15), in the
 * order their figures, settings and schema fields are listed and their
 * detectors run. A new kind is its file beside these and its line here.
 */
import { cycleKind } from './cycle.js'
import { errorsKind } from './errors.js'
import { noProgressKind } from './no-progress.js'
import type { LoopKindDefinition } from '../loops.js'

export const LOOP_KIND_LIST: readonly LoopKindDefinition[] = Object.freeze([
  cycleKind,
  errorsKind,
  noProgressKind
])
