/**
 * Validation in bounded time (SPEC section 19): `uniqueItems` checked by
 * toolgate in O(n log n) instead of Ajv's pairwise O(n²), and each call's
 * validation held to a time budget: one that overran it, or that ran out of
 * stack, is a failed validation (the call is `rejected`, reason
 * `invalid_arguments`), never an error of the service.
 */
import { performance } from 'node:perf_hooks'
import type { Ajv, ErrorObject, SchemaValidateFunction, ValidateFunction } from 'ajv'

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
 * `validate` held to `maxMs` per call: a validation that took longer, or
 * that overflowed the stack, answers false with one error saying so (no
 * value in it). The answer keeps Ajv's shape: `errors` of the last call.
 *
 * What is held to `maxMs` is the lesser of the wall-clock time and the CPU
 * time the process used meanwhile: on a loaded machine a validation waits
 * for a CPU part of the way (wall-clock time it did not spend working),
 * and an ordinary call must not be refused for that; the CPU time of the
 * process (its other threads included) is never less than what the
 * validation itself spent working, nor is the wall-clock time, so a
 * validation that works longer than `maxMs` is refused whatever the load.
 * A validation over the budget on the wall clock alone may have waited
 * for a CPU, or been held by a collector's pause (whose helper threads
 * count as the process's CPU time): it is run once more, timed on both
 * clocks, and refused only when that run is over the budget on both (work
 * that costs that much costs it again). A refused call has so used at
 * most about twice `maxMs`. An ordinary call reads only the wall clock:
 * the CPU clock is a system call that sums every thread of the process,
 * a few microseconds when the process is idle and more when its threads
 * are busy.
 */
export function boundedValidate (validate: ValidateFunction, maxMs: number, clocks: ValidationClocks = PROCESS_CLOCKS): ValidateFunction {
  const bounded = function (this: unknown, data: unknown): boolean {
    let valid: boolean
    try {
      const wall = clocks.wall()
      valid = validate(data) as boolean
      if (clocks.wall() - wall > maxMs) {
        const again = clocks.wall()
        const cpu = clocks.cpu()
        valid = validate(data) as boolean
        if (clocks.wall() - again > maxMs && clocks.cpu() - cpu > maxMs) {
          bounded.errors = [costError(`validating the arguments took longer than ${maxMs} ms (TOOLGATE_MAX_VALIDATION_MS)`)]
          return false
        }
      }
      bounded.errors = validate.errors
    } catch (err) {
      if (!(err instanceof RangeError)) throw err
      bounded.errors = [costError('the arguments are too deeply nested or too large for the schema to validate')]
      return false
    }
    return valid
  } as ValidateFunction
  bounded.schema = validate.schema
  bounded.schemaEnv = validate.schemaEnv
  bounded.errors = null
  return bounded
}

function costError (message: string): ErrorObject {
  return { keyword: 'cost', instancePath: '', schemaPath: '', params: {}, message }
}
