/**
 * The validation thread's worker (./validation-thread.ts, a WorkerPool's):
 * compiles each schema it is sent with the registry's compiler, keeps the
 * last MAX_SCHEMAS, and validates, timed as boundedValidate times. Its
 * deadline starts once the schema is compiled (`started`).
 */
import { parentPort } from 'node:worker_threads'
import type { ValidateFunction } from 'ajv'
import type { WorkerReply } from '../workers/pool.js'
import { timedValidation, type Validation } from './bounded-validate.js'
import { compileAlone, createSchemaCompiler } from './schema-compiler.js'
import type { Request } from './validation-thread.js'

const MAX_SCHEMAS = 256
const ajv = createSchemaCompiler()
const compiled = new Map<number, ValidateFunction>()
const port = parentPort
if (port === null) throw new Error('validation-worker runs as a worker thread of the validation thread')
const reply = (message: WorkerReply<Validation>): void => { port.postMessage(message) }

port.on('message', (request: Request) => {
  let validate = compiled.get(request.key)
  if (validate === undefined) {
    // Sent without its schema, which this worker no longer keeps: asked to be sent it again, with the schema.
    if (request.schema === undefined) return reply({ id: request.id, again: true })
    validate = compileAlone(ajv, request.schema)
    compiled.set(request.key, validate)
    if (compiled.size > MAX_SCHEMAS) compiled.delete(compiled.keys().next().value!)
  }
  reply({ id: request.id, started: true })
  const verdict = timedValidation(validate, request.data, request.maxMs)
  // Cloning a large value back costs the event loop as much as cloning it here did: only when defaults may have been filled in.
  reply({ id: request.id, done: verdict.valid && !request.fills ? { valid: true, value: null } : verdict })
})
reply({ ready: true })
