import type { FastifyInstance } from 'fastify'
import sjson from 'secure-json-parse'
import { ProblemError } from '../errors.js'
import { MAX_JSON_DEPTH, jsonTextNestsDeeper } from '../model/json.js'


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
      done(new ProblemError('invalid_request', `The body nests deeper than ${MAX_JSON_DEPTH} levels.`))
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
    const problem = bodyProblem(value, MAX_JSON_DEPTH)
    if (problem !== null) {
      done(new ProblemError('invalid_request', problem === 'depth'
        ? `The body nests deeper than ${MAX_JSON_DEPTH} levels.`
        : 'The body holds a number too large to represent.'))
      return
    }
    done(null, value)
  }
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse)
  app.addContentTypeParser(/^application\/[a-z0-9.+-]*\+json$/, { parseAs: 'string' }, parse)
  // Anything else is refused, not parsed.
  app.addContentTypeParser('*', (_req, _payload, done) => {
    done(new ProblemError('unsupported_media_type', 'Send the body as application/json.'))
  })
}
