/**
 * Readers for provider objects: each checks one value's type and, when it
 * is wrong, throws the 400 that names where it is, as a JSON pointer into
 * the request body, so a caller sees which field of which item is off.
 */
import { ProblemError } from '../errors.js'
import { isObject } from '../model/json.js'

export type Json = Record<string, unknown>

/** The 400 for a provider object of the wrong shape at `path`. */
export function shapeError (path: string, expected: string): ProblemError {
  return new ProblemError('invalid_request', `body${path} ${expected}`, { pointer: path })
}


export function object (value: unknown, path: string): Json {
  if (!isObject(value)) throw shapeError(path, 'must be object')
  return value
}

export function array (value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw shapeError(path, 'must be array')
  return value
}

/** An array that may be absent or null (providers leave empty lists out). */
export function optionalArray (value: unknown, path: string): unknown[] {
  return value === undefined || value === null ? [] : array(value, path)
}

export function string (value: unknown, path: string): string {
  if (typeof value !== 'string') throw shapeError(path, 'must be string')
  return value
}

export function nonEmptyString (value: unknown, path: string): string {
  if (string(value, path) === '') throw shapeError(path, 'must NOT have fewer than 1 characters')
  return value as string
}

export function optionalString (value: unknown, path: string): string | undefined {
  return value === undefined || value === null ? undefined : string(value, path)
}

/** A token count: a non-negative integer; absent or null counts as none. */
export function tokenCount (value: unknown, path: string): number {
  if (value === undefined || value === null) return 0
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw shapeError(path, 'must be a non-negative integer')
  return value
}
