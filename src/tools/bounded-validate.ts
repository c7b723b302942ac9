/**
 * Validation in bounded time (SPEC section 19): `uniqueItems` checked by
 * toolgate in O(n log n) instead of Ajv's pairwise O(n²), and each call's
 * validation held to a time budget: one that overran it, or that ran out of
 * stack, is a failed validation (the call is `rejected`, reason
 * `invalid_arguments`), never an error of the service; one that could hold
 * the event loop runs on the validation thread (./validation-thread.ts).
 */
import { performance } from 'node:perf_hooks'
import type { Ajv, ErrorObject, SchemaValidateFunction, ValidateFunction } from 'ajv'
import type { BoundedValidate, Validation } from '../model/tool.js'

export const DEFAULT_MAX_VALIDATION_MS = 50

/**
 * Replaces Ajv's `uniqueItems` with one that compares items by a canonical
 * JSON text (object keys sorted), kept in a Set: linear in the array's
 * size plus the sort of each object's keys, where Ajv compares every pair of
 * items deeply. Equality is JSON Schema's: same JSON value, key order aside.
 */
export function addUniqueItems (ajv: Ajv): void {
  ajv.removeKeyword('uniqueItems')
  const validate: SchemaValidateFunction = (unique: boolean, data: unknown[]): boolean => {
    if (!unique) return true
    const seen = new Map<string, number>()
    for (let i = 0; i < data.length; i++) {
      const text = canonical(data[i])
      const first = seen.get(text)
      if (first !== undefined) {
        validate.errors = [{ keyword: 'uniqueItems', message: `must NOT have duplicate items (items ## ${first} and ${i} are identical)`, params: { i: first, j: i } }]
        return false
      }
      seen.set(text, i)
    }
    return true
  }
  ajv.addKeyword({ keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', validate, errors: true })
}

/** JSON text with every object's keys in order, so equal values give equal texts. */
function canonical (value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) {
    let out = '['
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + canonical(value[i])
    return out + ']'
  }
  const keys = Object.keys(value).sort()
  let out = '{'
  for (let i = 0; i < keys.length; i++) out += (i === 0 ? '' : ',') + JSON.stringify(keys[i]) + ':' + canonical((value as Record<string, unknown>)[keys[i]!])
  return out + '}'
}

/** Clocks in milliseconds: a monotonic wall clock, and the CPU time the process has used. */
export interface ValidationClocks {
  wall: () => number
  cpu: () => number
}

/** The process's own clocks. */
export const PROCESS_CLOCKS: ValidationClocks = Object.freeze({
  wall: () => performance.now(),
  cpu: () => {
    const used = process.cpuUsage()
    return (used.user + used.system) / 1000
  }
})

/**
 * `validate` held to `maxMs` per call, run where it is called: a validation
 * that took longer, or that overflowed the stack, answers false with one
 * error saying so (no value in it). The answer keeps Ajv's shape: `errors`
 * of the last call. It cannot stop a validation, only judge it after: tool
 * arguments and MCP answers, whose size the caller chooses, go through
 * boundedValidator instead; this is for data whose size the service bounds
 * (an elicitation's answer).
 *
 * What is held to `maxMs` is the lesser of the wall-clock time and the CPU
 * time the process used meanwhile: on a loaded machine a validation waits
 * for a CPU part of the way (wall-clock time it did not spend working),
 * and an ordinary call must not be refused for that; the CPU time of the
 * process (its other threads included) is never less than what the
 * validation itself spent working, nor is the wall-clock time, so a
 * validation that works longer than `maxMs` is refused whatever the load.
 */
export function boundedValidate (validate: ValidateFunction, maxMs: number, clocks: ValidationClocks = PROCESS_CLOCKS): ValidateFunction {
  const bounded = function (this: unknown, data: unknown): boolean {
    const verdict = timedValidation(validate, data, maxMs, clocks)
    bounded.errors = verdict.valid ? validate.errors : verdict.errors
    return verdict.valid
  } as ValidateFunction
  bounded.schema = validate.schema
  bounded.schemaEnv = validate.schemaEnv
  bounded.errors = null
  return bounded
}

export type { BoundedValidate, Validation }

/**
 * One validation timed on both clocks (as boundedValidate describes): the
 * validation thread's verdict on a call, where reading the CPU clock (a
 * few microseconds) is nothing beside the hop.
 */
export function timedValidation (validate: ValidateFunction, data: unknown, maxMs: number, clocks: ValidationClocks = PROCESS_CLOCKS): Validation {
  try {
    const wall = clocks.wall()
    const cpu = clocks.cpu()
    const valid = validate(data) as boolean
    if (clocks.wall() - wall > maxMs && clocks.cpu() - cpu > maxMs) return overBudget(maxMs)
    return valid ? { valid: true, value: data } : { valid: false, errors: validate.errors ?? [] }
  } catch (err) {
    if (!(err instanceof RangeError)) throw err
    return { valid: false, errors: [costError(TOO_DEEP)] }
  }
}

/** A validation stopped or refused for its time. */
export function overBudget (maxMs: number): Validation {
  return { valid: false, errors: [costError(`validating the arguments took longer than ${maxMs} ms (TOOLGATE_MAX_VALIDATION_MS)`)] }
}

const TOO_DEEP = 'the arguments are too deeply nested or too large for the schema to validate'

/**
 * Validation in the event loop costs at most about this many units of a
 * schema's weight (schema-cost.ts) times bytes of data: some 10-20 ms of
 * the costliest checks (a comparison with each `enum` value, about 20 ns).
 */
export const IN_PROCESS_UNITS = 1_000_000
/** Data larger than this (bytes of JSON, about) is validated on the validation thread whatever the schema. */
export const IN_PROCESS_BYTES = 32 * 1024

/**
 * Where boundedValidator validates what it cannot validate at once, with a
 * deadline. `fills`: the schema may fill defaults in, so a valid verdict
 * answers the validated copy; otherwise it answers `data` itself, which the
 * validation cannot have changed.
 */
export interface ValidationRunner {
  /** `owner`: whose validation it is (a tenant, a tool server), for its turn among the others waiting. */
  validate: (key: number, schema: unknown, data: unknown, maxMs: number, fills: boolean, owner?: string) => Promise<Validation>
}

let nextKey = 0

/**
 * Validation in bounded time (SPEC section 19), without a thread hop for
 * the common call. A synchronous Ajv validation cannot be interrupted, and
 * one held to a budget only after it ran has already held the event loop
 * (an `enum` of 20,000 values on 20,000 items: seconds). So each call is
 * weighed before it runs: the schema's weight (at most what validating one
 * byte of data costs, from the cost model) times the size of the data, a
 * walk that stops as soon as the product is over IN_PROCESS_UNITS. A call
 * within it runs here, as before, for the time that bound allows (an
 * ordinary call's arguments are a few hundred bytes: some microseconds of
 * weighing). Any other call goes to `runner`, the validation thread, which
 * stops it at its deadline (worker.terminate): its cost is the thread's,
 * never the event loop's, whatever the cost model missed.
 *
 * Why not the cost model alone: an upper bound on the work has to be far
 * above what most large calls really cost, and refusing on it would refuse
 * calls that validate in a few milliseconds; the thread gives them their
 * real time, and the deadline is exact.
 *
 * A validation here that still took longer than `maxMs` on the wall clock
 * may have waited for a CPU or for a collector's pause: the thread runs it
 * again, timed on the wall and the CPU clocks, and its verdict stands (it
 * used to run a second time here, holding the loop as long again).
 *
 * `fills` (default true): the schema may fill defaults in. When it cannot,
 * a valid verdict from the thread is the data sent, not a copy cloned back:
 * a large object is not rebuilt in the event loop, and stays the request's
 * own (whose canonical text is known already).
 */
export function boundedValidator (validate: ValidateFunction, opts: { schema: unknown, weight: number, maxMs: number, runner: ValidationRunner, clocks?: ValidationClocks, fills?: boolean }): BoundedValidate {
  const { schema, weight, maxMs, runner } = opts
  const clocks = opts.clocks ?? PROCESS_CLOCKS
  const fills = opts.fills ?? true
  const key = nextKey++
  const limit = weight === 0 ? IN_PROCESS_BYTES : Math.min(IN_PROCESS_BYTES, IN_PROCESS_UNITS / weight)
  return (data, bytes, owner) => {
    // A known size spares the walk: on an object of many keys its first step alone lists them all.
    if (weight === Infinity || (bytes === undefined ? sizeOver(data, limit) : bytes > limit)) return runner.validate(key, schema, data, maxMs, fills, owner)
    const wall = clocks.wall()
    let valid: boolean
    try {
      valid = validate(data) as boolean
    } catch (err) {
      if (!(err instanceof RangeError)) throw err
      return { valid: false, errors: [costError(TOO_DEEP)] }
    }
    if (clocks.wall() - wall > maxMs) return runner.validate(key, schema, data, maxMs, fills, owner)
    return valid ? { valid: true, value: data } : { valid: false, errors: validate.errors ?? [] }
  }
}

/**
 * Whether `value` is over `limit` bytes as JSON, about (a string its
 * length and quotes, a number 8, a key its length and 3): a walk that stops
 * once it is over, so a large value costs no more to weigh than a small one.
 */
export function sizeOver (value: unknown, limit: number): boolean {
  let size = 0
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const item = stack.pop()
    if (typeof item === 'string') size += item.length + 2
    else if (item === null || typeof item !== 'object') size += 8
    else if (Array.isArray(item)) {
      size += 2 + item.length
      if (size > limit) return true
      for (let i = 0; i < item.length; i++) stack.push(item[i])
    } else {
      size += 2
      for (const key in item) {
        size += key.length + 3
        if (size > limit) return true
        stack.push((item as Record<string, unknown>)[key])
      }
    }
    if (size > limit) return true
  }
  return false
}

/** A validator of `validate` that always runs here, untimed: for tools built in tests without a registry. */
export function unboundedValidator (validate: ValidateFunction): BoundedValidate {
  return (data) => validate(data) === true ? { valid: true, value: data } : { valid: false, errors: validate.errors ?? [] }
}

function costError (message: string): ErrorObject {
  return { keyword: 'cost', instancePath: '', schemaPath: '', params: {}, message }
}
