/**
 * A worker thread of the projection pool (./projection-pool.ts, a
 * WorkerPool's): evaluates one projection at a time and answers with its
 * checked content or the reason it failed. Each expression is compiled once per worker and kept
 * (the most recently used ones), since a tool's projection is evaluated at
 * every dispatch of it.
 */
import { parentPort } from 'node:worker_threads'
import type jsonata from 'jsonata'
import { type ProjectionLimits, compileExpression, describeJsonataError } from './projection-expression.js'
import type { ProjectionCheck } from '../model/tool.js'
import { checkProjectedValue } from './projected-value.js'
import type { WorkerReply } from '../workers/pool.js'

/** A projection to evaluate, as the pool posts it; `input` arrives structured-cloned. */
export interface ProjectionRequest {
  id: number
  source: string
  limits: ProjectionLimits
  input: unknown
  maxChars: number
}

/** A worker's answer to one request: the checked content, or why the projection failed. */
export type ProjectionAnswer = { check: ProjectionCheck } | { failure: string }

/** Compiled expressions a worker keeps: far more than the projections a service holds. */
const MAX_CACHED_EXPRESSIONS = 256
const expressions = new Map<string, jsonata.Expression>()

function expressionFor (source: string, limits: ProjectionLimits): jsonata.Expression {
  const key = `${limits.timeoutMs}:${limits.maxDepth}:${source}`
  let expression = expressions.get(key)
  if (expression !== undefined) {
    // Moved to the end: the Map's order is then least recently used first.
    expressions.delete(key)
  } else {
    expression = compileExpression(source, limits)
    if (expressions.size >= MAX_CACHED_EXPRESSIONS) expressions.delete(expressions.keys().next().value!)
  }
  expressions.set(key, expression)
  return expression
}

async function answer (request: ProjectionRequest): Promise<ProjectionAnswer> {
  try {
    const value: unknown = await expressionFor(request.source, request.limits).evaluate(request.input)
    return { check: checkProjectedValue(value, request.maxChars) }
  } catch (err) {
    return { failure: describeJsonataError(err, false) }
  }
}

const port = parentPort
if (port === null) throw new Error('projection-worker runs as a worker thread of the projection pool')
const reply = (message: WorkerReply<ProjectionAnswer>): void => { port.postMessage(message) }
port.on('message', (request: ProjectionRequest) => {
  reply({ id: request.id, started: true })
  void answer(request).then((done) => { reply({ id: request.id, done }) })
})
reply({ ready: true })
