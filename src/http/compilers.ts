import type { FastifyInstance } from 'fastify'
import AjvModule from 'ajv'
import addFormatsModule from 'ajv-formats'
import fastJsonStringify from 'fast-json-stringify'
import type { TSchema } from '@sinclair/typebox'

// Both are CommonJS: under NodeNext the default import is module.exports, whose `default` is the export.
const Ajv = AjvModule.default
const addFormats = addFormatsModule.default

/**
 * Route schemas are module constants, the same objects in every app a
 * process builds (tests build hundreds). Compiling each once per process,
 * instead of once per app, makes building an app cheap; the compiled
 * functions depend only on the schema and the shared schemas below.
 */
const ajv = new Ajv({ removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false, strict: false })
addFormats(ajv)
const validators = new WeakMap<object, ReturnType<typeof ajv.compile>>()
const serializers = new WeakMap<object, (data: unknown) => string>()

/** Installs the process-wide validator and serializer compilers; `shared` are the schemas routes $ref. */
export function useSharedCompilers (app: FastifyInstance, shared: readonly TSchema[]): void {
  for (const schema of shared) if (ajv.getSchema(schema.$id!) === undefined) ajv.addSchema(schema)
  const external = Object.fromEntries(shared.map((s) => [s.$id!, s]))

  app.setValidatorCompiler(({ schema }) => {
    let validate = validators.get(schema)
    if (validate === undefined) {
      validate = ajv.compile(schema)
      validators.set(schema, validate)
    }
    return validate
  })

  app.setSerializerCompiler(({ schema }) => {
    let serialize = serializers.get(schema)
    if (serialize === undefined) {
      serialize = fastJsonStringify(schema as Parameters<typeof fastJsonStringify>[0], { schema: external as Record<string, never> }) as (data: unknown) => string
      serializers.set(schema, serialize)
    }
    return serialize
  })
}
