import type { FastifyInstance } from 'fastify'
import sjson from 'secure-json-parse'
import { ProblemError } from '../errors.js'
import { MAX_JSON_DEPTH, jsonTextNestsDeeper } from '../model/json.js'


/**
 * A body longer than this (characters) is walked in a turn of the event loop
 * after the one that parsed it, and handed on in a third: near the 1 MiB
 * limit the parse of an object of a hundred thousand keys takes some 20-40
 * ms and the walk 10-15, and what the route does next (the calls'
 * canonical text) must not add up with them into one stall.
 */
const LARGE_BODY_CHARS = 64 * 1024

const TOO_DEEP = `The body nests deeper than ${MAX_JSON_DEPTH} levels.`

/** Whether a parsed JSON value nests deeper than `limit` (the root object is level 1). */
export function jsonDepthExceeds (value: unknown, limit: number): boolean {
  return bodyProblem(value, limit) === 'depth'
}

/**
 * The first thing wrong with a parsed body: nesting past `limit`, or a number
 * too large for a double (JSON.parse reads 1e400 as Infinity, which nothing
 * downstream can hold or write back). Recursive, without allocating: the
 * recursion stops one level past `limit`, so it stays shallow.
 */
function bodyProblem (value: unknown, limit: number): 'depth' | 'number' | null {
  return problemOf(value, 0, limit)
}

/** The first problem of `value`, whose parent is at `parentDepth` (the root's parent at 0, so the root object is level 1). */
function problemOf (value: unknown, parentDepth: number, limit: number): 'depth' | 'number' | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : 'number'
  if (typeof value !== 'object' || value === null) return null
  const depth = parentDepth + 1
  if (depth > limit) return 'depth'
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = problemOf(value[i], depth, limit)
      if (problem !== null) return problem
    }
    return null
  }
  for (const key in value) {
    const problem = problemOf((value as Record<string, unknown>)[key], depth, limit)
    if (problem !== null) return problem
  }
  return null
}

/** Hands `value` on, or the first problem of it as a 400. */
function checked (value: unknown, done: (err: Error | null, value?: unknown) => void): void {
  const problem = bodyProblem(value, MAX_JSON_DEPTH)
  if (problem === null) {
    done(null, value)
    return
  }
  done(new ProblemError('invalid_request', problem === 'depth'
    ? TOO_DEEP
    : 'The body holds a number too large to represent.'))
}

/**
 * Request bodies: JSON only, prototype-poisoning keys refused, nesting deeper
 * than 64 and numbers past a double's range refused, all as 400 problems
 * before any handler runs. An empty or blank body reads as no body.
 */
export function registerJsonBody (app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  const parse = (_req: unknown, body: string | Buffer, done: (err: Error | null, value?: unknown) => void): void => {
    const text = body as string
    // An empty body is no body: many client libraries send `Content-Type: application/json`
    // on every POST, bodiless ones (cancel) included. A route that needs a body refuses it by its schema.
    if (text.trim() === '') {
      done(null, undefined)
      return
    }
    if (jsonTextNestsDeeper(text, MAX_JSON_DEPTH)) {
      done(new ProblemError('invalid_request', TOO_DEEP))
      return
    }
    let value: unknown
    try {
      value = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
    } catch (err) {
      const proto = /prototype|constructor/i.test((err as Error).message)
      done(new ProblemError('invalid_request', proto ? 'The body holds a forbidden key (__proto__ or constructor.prototype).' : 'The body is not valid JSON.'))
      return
    }
    if (text.length <= LARGE_BODY_CHARS) {
      checked(value, done)
      return
    }
    // A large body: its parse, its walk and what the route does next each in a turn of the event loop of its own.
    setImmediate(() => { checked(value, (err, body) => { setImmediate(done, err, body) }) })
  }
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse)
  app.addContentTypeParser(/^application\/[a-z0-9.+-]*\+json$/, { parseAs: 'string' }, parse)
  // Anything else is refused, not parsed.
  app.addContentTypeParser('*', (_req, _payload, done) => {
    done(new ProblemError('unsupported_media_type', 'Send the body as application/json.'))
  })
}
