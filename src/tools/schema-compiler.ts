/**
 * The JSON Schema compiler of tool schemas, as the registry and the
 * validation thread both build it: Ajv for draft 2020-12 with formats,
 * schema defaults filled in (`useDefaults`), patterns matched in linear
 * time (RE2) and toolgate's own `uniqueItems`.
 */
import Ajv2020Module from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { ValidateFunction } from 'ajv'
import { linearRegExp } from '../model/linear-regexp.js'
import { addUniqueItems } from './bounded-validate.js'

// Both are CommonJS: under NodeNext the default import is module.exports, whose `default` is the export.
const Ajv2020 = Ajv2020Module.default
const addFormats = addFormatsModule.default

/** An Ajv of tool schemas. */
export type SchemaCompiler = InstanceType<typeof Ajv2020>

/** A new compiler: building one (with formats) costs far more than a compile, so each holder keeps one. */
export function createSchemaCompiler (): SchemaCompiler {
  const ajv = new Ajv2020({ useDefaults: true, strict: false, allErrors: false, validateFormats: true, code: { regExp: linearRegExp } })
  addFormats(ajv)
  addUniqueItems(ajv)
  return ajv
}

/**
 * Compiles one schema and leaves the Ajv's schemas and references as they
 * were: the compiled function stands alone, and forgetting what the schema
 * named lets another tool (or a replacement) use the same `$id`. Ajv's own
 * removal drops whatever a top-level `$id` names, even a meta-schema the
 * schema failed to displace (a tool with the 2020-12 meta-schema's `$id`
 * then broke every later compile of the process), and keeps the `$id`s
 * inside a schema; so the two tables are restored whole, a score of
 * entries (the meta-schemas) against a compile's milliseconds.
 */
export function compileAlone (ajv: SchemaCompiler, schema: unknown): ValidateFunction {
  const schemas = { ...ajv.schemas }
  const refs = { ...ajv.refs }
  try {
    return ajv.compile(schema as object)
  } finally {
    if (typeof schema === 'object' && schema !== null) ajv.removeSchema(schema)
    restore(ajv.schemas, schemas)
    restore(ajv.refs, refs)
  }
}

/** Makes `table` hold exactly the entries of `before` again. */
function restore<T> (table: Record<string, T>, before: Record<string, T>): void {
  for (const key of Object.keys(table)) if (!Object.hasOwn(before, key)) delete table[key]
  Object.assign(table, before)
}
