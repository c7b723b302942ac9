/**
 * The prepare phase: every call of the batch through the preparation stages
 * (src/prepare/pipeline.ts), then the canonical text and fingerprint of each
 * call's prepared arguments. A plain function of its inputs, so the engine
 * can run it before it takes the run's lease and admit the batch in the
 * lease's own step (one store write where there would be two).
 */
import { performance } from 'node:perf_hooks'
import { IsoTime } from '../../iso-time.js'
import { rejectIncomplete } from '../../formats/incomplete.js'
import { prepareBatch } from '../../prepare/pipeline.js'
import type { PreparationOutcome, RawCall } from '../../model/call.js'
import { type CanonicalText, canonicalText } from '../../model/json.js'
import { inSlices } from '../../model/slices.js'
import { callFingerprint } from '../../repeat/loops.js'
import type { ToolLookup } from '../../model/tool.js'
import type { EngineDeps } from '../engine-types.js'
import type { IdentifiedCalls } from '../identify-calls.js'
import type { BatchRuntime } from '../runtime.js'
import { type BatchState, type Prepared, callAt } from '../state.js'

/** What giving prepared calls their texts and fingerprints reads of the engine's dependencies. */
type PreparedDeps = Pick<EngineDeps, 'clock' | 'authorizer'>

/** Arguments whose canonical text is longer than this get their executor body's text written as they are prepared. */
const LARGE_ARGUMENTS = 32 * 1024

/** When batches were prepared, as ISO text. */
const PREPARED_TIMES = new IsoTime()

/** What preparation reads of a batch: a request, or a batch's state. */
export interface PrepareInput {
  runId: string
  tenant: string
  calls: RawCall[]
  scopes: ReadonlySet<string>
  incomplete?: boolean | undefined
}

/** Prepares a batch's calls for a run that allows `allowedTools` (null: every tool); a promise only when preparation waits (an external authorizer, a costly batch). */
export function prepareCalls (deps: EngineDeps, input: PrepareInput, identified: IdentifiedCalls, allowedTools: readonly string[] | null): Prepared | Promise<Prepared> {
  const preparedAt = PREPARED_TIMES.at(deps.clock.now())
  const preparing = performance.now()
  const outcomes = input.incomplete === true ? rejectIncomplete(input.calls) : prepareBatch(input.calls, deps.tools, {
    runId: input.runId,
    tenant: input.tenant,
    allowedTools: allowedTools === null ? null : new Set(allowedTools),
    scopes: input.scopes,
    maxArgumentBytes: deps.maxArgumentBytes,
    // Parsed from this request's body and hashed already (identifyCalls): nothing else reads them.
    argumentsOwned: true,
    argumentTexts: identified.argumentTexts
  }, deps.authorizer)
  if (outcomes instanceof Promise) return outcomes.then((o) => fingerprinted(deps, input.calls, identified.argumentTexts, o, preparedAt, performance.now() - preparing))
  return fingerprinted(deps, input.calls, identified.argumentTexts, outcomes, preparedAt, performance.now() - preparing)
}

/** Calls prepared before (a batch taken up after approvals), as prepared now: their texts and fingerprints. */
export function preparedAgain (deps: PreparedDeps, calls: readonly RawCall[], outcomes: readonly PreparationOutcome[]): Prepared {
  const texts = outcomes.map((o) => canonicalText(o.arguments ?? null))
  const argumentTexts: CanonicalText[] = []
  const fingerprints: string[] = []
  for (let i = 0; i < outcomes.length; i++) fingerprintInto(deps, calls, texts, outcomes, i, argumentTexts, fingerprints)
  return { outcomes, argumentTexts, fingerprints, preparedAt: PREPARED_TIMES.at(deps.clock.now()), preparationMs: 0 }
}

/**
 * One serialization of the arguments gives the fingerprint and, mostly, the
 * executor's body too: the request's own, when preparation left them as
 * they came, else the prepared ones'. Call by call in slices of the event
 * loop (src/model/slices.ts): a promise only when they took more than one.
 */
function fingerprinted (deps: PreparedDeps, calls: readonly RawCall[], requestTexts: readonly CanonicalText[], outcomes: readonly PreparationOutcome[],
  preparedAt: string, preparationMs: number): Prepared | Promise<Prepared> {
  const argumentTexts: CanonicalText[] = []
  const fingerprints: string[] = []
  const done = inSlices(outcomes, (_o, i) => fingerprintInto(deps, calls, requestTexts, outcomes, i, argumentTexts, fingerprints), textLength)
  const prepared: Prepared = { outcomes, argumentTexts, fingerprints, preparedAt, preparationMs }
  return done instanceof Promise ? done.then(() => prepared) : prepared
}

/** Call `i`'s canonical text and fingerprint, pushed onto `argumentTexts` and `fingerprints`; the text is answered too. */
function fingerprintInto (deps: PreparedDeps, calls: readonly RawCall[], requestTexts: readonly CanonicalText[], outcomes: readonly PreparationOutcome[], i: number,
  argumentTexts: CanonicalText[], fingerprints: string[]): CanonicalText {
  const o = callAt(outcomes, i, 'outcome')
  const text = leftAsSent(deps, o, callAt(calls, i, 'call')) ? callAt(requestTexts, i, 'argument text') : canonicalText(o.arguments ?? null)
  // The executor's body is JSON.stringify's text: for large arguments written here, in this call's slice, not with every call of its epoch at once.
  argumentTexts.push(text.plain || !o.ok || text.text.length < LARGE_ARGUMENTS ? text : { text: text.text, plain: false, json: JSON.stringify(o.arguments) })
  fingerprints.push(callFingerprint(o.tool?.name ?? o.requestedName, o.tool?.ignoreArguments, o.arguments, text.text))
  return text
}

/** The work a call's canonical text stands for, in characters (src/model/slices.ts). */
function textLength (text: CanonicalText): number {
  return text.text.length
}

/**
 * Whether a call's prepared arguments are exactly the request's: the same
 * object, of a tool whose preparation changes nothing in place, with no
 * external authorizer (an in-process one is handed the object).
 */
function leftAsSent (deps: PreparedDeps, outcome: PreparationOutcome, raw: RawCall): boolean {
  return outcome.arguments === raw.arguments && (outcome.tool === null || !outcome.tool.preparesInPlace) && deps.authorizer === undefined
}

/**
 * Whether a batch may be prepared before its run is read: no external
 * authorizer (it would be asked about batches that then never start), and
 * no call of a tool whose preparation changes the request's arguments in
 * place (were the run's tool list not the one assumed, the calls are
 * prepared again from the request as it came).
 */
export function preparableFirst (deps: EngineDeps, calls: readonly RawCall[], tools: ToolLookup): boolean {
  if (deps.authorizer !== undefined) return false
  for (const c of calls) if (typeof c.name === 'string' && tools.resolve(c.name)?.preparesInPlace === true) return false
  return true
}

/** Whether two runs' tool lists allow the same tools, as preparation reads them. */
export function sameTools (a: readonly string[] | null, b: readonly string[] | null): boolean {
  if (a === null || b === null) return a === b
  return a.length === b.length && a.every((name, i) => name === b[i])
}

/** The prepare phase: the batch's calls prepared; a slow preparation is reported. */
export async function prepare (state: BatchState, rt: BatchRuntime): Promise<Prepared> {
  const prepared = await prepareCalls(rt.deps, state, state.identified, state.options.tools)
  notePreparation(prepared, rt)
  return prepared
}

/** Reports a preparation that took longer than the engine's `slowPreparationMs`. */
export function notePreparation (prepared: Prepared, rt: BatchRuntime): void {
  if (prepared.preparationMs > (rt.deps.slowPreparationMs ?? Infinity)) rt.observer.preparationSlow(prepared.preparationMs)
}
