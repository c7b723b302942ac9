import type { FastifyInstance } from 'fastify'
import AjvModule from 'ajv'
import addFormatsModule from 'ajv-formats'
import fastJsonStringify from 'fast-json-stringify'
import type { TSchema } from '@sinclair/typebox'

// Both are CommonJS: under NodeNext the default import is module.exports, whose `default` is the export.
const Ajv = AjvModule.default
const addFormats = addFormatsModule.default

/**
 * Each route schema is compiled once per process, not once per app (tests
 * build hundreds of apps in one process): a compiled function depends only
 * on the schema's JSON and the shared schemas it refers to, which are the
 * same in every app. Most route schemas are made anew by each app's routes
 * (a success answer carries its description, `answer()`), so the key is the
 * schema's JSON text; the object itself is the fast path for the schemas
 * that are module constants.
 */
class CompiledOnce<F> {
  readonly #byObject = new WeakMap<object, F>()
  readonly #byText = new Map<string, F>()

  get (schema: object, compile: () => F): F {
    let compiled = this.#byObject.get(schema)
    if (compiled === undefined) {
      const text = JSON.stringify(schema)
      compiled = this.#byText.get(text)
      if (compiled === undefined) {
        compiled = compile()
        this.#byText.set(text, compiled)
      }
      this.#byObject.set(schema, compiled)
    }
    return compiled
  }
}

const ajv = new Ajv({ removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false, strict: false })
addFormats(ajv)
const validators = new CompiledOnce<ReturnType<typeof ajv.compile>>()
const serializers = new CompiledOnce<(data: unknown) => string>()

/** The shared schemas `schema` refers to, directly or through each other, by id. */
function sharedRefs (schema: unknown, shared: ReadonlyMap<string, TSchema>): Record<string, TSchema> {
  const found: Record<string, TSchema> = {}
  const pending: unknown[] = [schema]
  while (pending.length > 0) {
    const node = pending.pop()
    if (typeof node !== 'object' || node === null) continue
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') {
        const id = value.split('#', 1)[0]!
        const target = shared.get(id)
        if (target !== undefined && !(id in found)) {
          found[id] = target
          pending.push(target)
        }
      } else if (typeof value === 'object') {
        pending.push(value)
      }
    }
  }
  return found
}

/** Installs the process-wide validator and serializer compilers; `shared` are the schemas routes $ref. */
export function useSharedCompilers (app: FastifyInstance, shared: readonly TSchema[]): void {
  for (const schema of shared) if (ajv.getSchema(schema.$id!) === undefined) ajv.addSchema(schema)
  const byId = new Map(shared.map((s) => [s.$id!, s]))

  app.setValidatorCompiler(({ schema }) => validators.get(schema, () => ajv.compile(schema)))

  // fast-json-stringify checks every external schema it is given on each build: give it only those this schema uses.
  app.setSerializerCompiler(({ schema }) => serializers.get(schema, () =>
    fastJsonStringify(schema as Parameters<typeof fastJsonStringify>[0], { schema: sharedRefs(schema, byId) as Record<string, never> }) as (data: unknown) => string))
}
