/**
 * What a batch does before any of its calls may go: its calls prepared
 * (fingerprints included) and, inside the run's atomic update, admitted.
 * Both are plain functions of their inputs, so the engine can prepare a
 * batch before it takes the lease and admit it in the lease's own step
 * (one store write where there were two), and BatchRun can do either after.
 */
import { performance } from 'node:perf_hooks'
import { IsoTime } from '../events/iso-time.js'
import { rejectIncomplete } from '../formats/incomplete.js'
import { prepareBatch } from '../prepare/pipeline.js'
import type { PreparationOutcome, RawCall } from '../prepare/types.js'
import { type CanonicalText, canonicalText } from '../repeat/fingerprint.js'
import { callFingerprint } from '../repeat/ignore.js'
import type { LoopState } from '../repeat/loops.js'
import { terminate } from '../runs/transitions.js'
import type { RunRecord, TerminationReason } from '../runs/types.js'
import type { ToolLookup } from '../tools/types.js'
import { weighCalls } from '../uncertain/batch.js'
import type { HeldBack } from '../uncertain/types.js'
import { admit, type Admission } from './admit.js'
import type { BatchRequest, EngineDeps } from './engine-types.js'
import type { IdentifiedCalls } from './identify-calls.js'
import { admitLoops } from './loop-watch.js'

/** When batches were prepared, as ISO text. */
const PREPARED_TIMES = new IsoTime()

/** A batch's calls as prepared, with the canonical text and fingerprint of each call's prepared arguments. */
export interface Prepared {
  outcomes: readonly PreparationOutcome[]
  argumentTexts: CanonicalText[]
  fingerprints: string[]
  /** When preparation started, as ISO text (receipts' timelines). */
  preparedAt: string
  preparationMs: number
}

/** Prepares a batch's calls for a run that allows `allowedTools` (null: every tool). */
export async function prepareCalls (deps: EngineDeps, req: BatchRequest, calls: IdentifiedCalls, allowedTools: readonly string[] | null): Promise<Prepared> {
  const preparedAt = PREPARED_TIMES.at(Date.now())
  const preparing = performance.now()
  const outcomes = req.approvals?.outcomes ?? (req.incomplete === true ? rejectIncomplete(req.calls) : await prepareBatch(req.calls, deps.tools, {
    runId: req.runId,
    tenant: req.tenant,
    allowedTools: allowedTools === null ? null : new Set(allowedTools),
    scopes: req.scopes,
    maxArgumentBytes: deps.maxArgumentBytes,
    // Parsed from this request's body and hashed already (identifyCalls): nothing else reads them.
    argumentsOwned: true,
    argumentTexts: calls.argumentTexts
  }, deps.authorizer))
  const preparationMs = performance.now() - preparing
  // One serialization of the arguments gives the fingerprint and, mostly, the executor's body too:
  // the request's own, when preparation left them as they came, else the prepared ones'.
  const argumentTexts: CanonicalText[] = []
  const fingerprints: string[] = []
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i]!
    const text = leftAsSent(deps, o, req.calls[i]!) ? calls.argumentTexts[i]! : canonicalText(o.arguments ?? null)
    argumentTexts.push(text)
    fingerprints.push(callFingerprint(o.tool?.name ?? o.requestedName, o.tool?.ignoreArguments, o.arguments, text.text))
  }
  return { outcomes, argumentTexts, fingerprints, preparedAt, preparationMs }
}

/**
 * Whether a call's prepared arguments are exactly the request's: the same
 * object, of a tool whose preparation changes nothing in place, with no
 * external authorizer (an in-process one is handed the object).
 */
function leftAsSent (deps: EngineDeps, outcome: PreparationOutcome, raw: RawCall): boolean {
  return outcome.arguments === raw.arguments && (outcome.tool === null || !outcome.tool.preparesInPlace) && deps.authorizer === undefined
}

/**
 * Whether a batch may be prepared before its run is read: no external
 * authorizer (it would be asked about batches that then never start), and
 * no call of a tool whose preparation changes the request's arguments in
 * place (were the run's tool list not the one assumed, the calls are
 * prepared again from the request as it came).
 */
export function preparableFirst (deps: EngineDeps, req: BatchRequest, tools: ToolLookup): boolean {
  if (deps.authorizer !== undefined || req.approvals !== undefined) return false
  for (const c of req.calls) if (typeof c.name === 'string' && tools.resolve(c.name)?.preparesInPlace === true) return false
  return true
}

/** Whether two runs' tool lists allow the same tools, as preparation reads them. */
export function sameTools (a: readonly string[] | null, b: readonly string[] | null): boolean {
  if (a === null || b === null) return a === b
  return a.length === b.length && a.every((name, i) => name === b[i])
}

/** What admission decided, and what the batch keeps of it: where the loop detectors start and which calls the run's uncertainties hold back. */
export interface Admitted {
  /** A reason when the run is no longer active and nothing may start. */
  verdict: Admission | TerminationReason | 'run_not_active'
  loopStart: LoopState | null
  held: Array<HeldBack | undefined>
}

/** Inside the run's atomic update: the repeat streak, the call budget and the state decide which calls go on. */
export function admitInto (r: RunRecord, batchId: string, prepared: Prepared): Admitted {
  if (r.state !== 'active') return { verdict: r.terminationReason ?? 'run_not_active', loopStart: null, held: [] }
  const { outcomes, fingerprints } = prepared
  // A resumed batch is admitted again from where its first admission started: its calls count once.
  const from = r.admitted?.batchId === batchId ? r.admitted : { batchId, repeat: r.repeat, toolCalls: r.counters.toolCalls }
  const a = admit(from.repeat, from.toolCalls, r.options.limits, outcomes.map((o, i) => ({ fingerprint: fingerprints[i]!, tracked: o.tool?.trackExactRepeats ?? true })))
  const loopStart = admitLoops(r, from, a, outcomes, fingerprints)
  r.admitted = from
  const held = weighCalls(r.uncertain, outcomes, fingerprints)
  r.repeat = a.repeat
  r.counters.toolCalls = from.toolCalls + a.admitted
  if (a.termination !== null) terminate(r, a.termination.reason)
  return { verdict: a, loopStart, held }
}
