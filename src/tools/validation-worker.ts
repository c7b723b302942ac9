/**
 * The validation thread's worker (./validation-thread.ts): compiles each
 * schema it is sent with the registry's compiler, keeps the last
 * MAX_SCHEMAS, and validates, timed as boundedValidate times.
 */
import { parentPort } from 'node:worker_threads'
import type { ValidateFunction } from 'ajv'
import { timedValidation } from './bounded-validate.js'
import { compileAlone, createSchemaCompiler } from './schema-compiler.js'
import type { Reply, Request } from './validation-thread.js'

const MAX_SCHEMAS = 256
const ajv = createSchemaCompiler()
const compiled = new Map<number, ValidateFunction>()

parentPort!.on('message', (request: Request) => {
  const reply = (message: Reply): void => { parentPort!.postMessage(message) }
  let validate = compiled.get(request.key)
  if (validate === undefined) {
    if (request.schema === undefined) return reply({ id: request.id, kind: 'missing' })
    validate = compileAlone(ajv, request.schema)
    compiled.set(request.key, validate)
    if (compiled.size > MAX_SCHEMAS) compiled.delete(compiled.keys().next().value!)
  }
  reply({ id: request.id, kind: 'started' })
  const verdict = timedValidation(validate, request.data, request.maxMs)
  // Cloning a large value back costs the event loop as much as cloning it here did: only when defaults may have been filled in.
  reply({ id: request.id, kind: 'done', verdict: verdict.valid && !request.fills ? { valid: true, value: null } : verdict })
})
