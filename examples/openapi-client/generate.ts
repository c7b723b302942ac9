/**
 * Generates `api.ts`, TypeScript types for every operation of toolgate's
 * openapi.yaml: its path parameters, query, body and the answer of each
 * status. The client beside it (`client.ts`) is typed by them alone.
 *
 *   npm run build && node dist/examples/openapi-client/generate.js
 *   (or: node --import ./test/loader/ts.mjs examples/openapi-client/generate.ts)
 *
 * test/examples/openapi-client.test.ts fails when the checked-in `api.ts`
 * differs from what this makes of the checked-in openapi.yaml.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import type { OpenAPIV3_1 } from 'openapi-types'
import { parse } from 'yaml'

type Schema = OpenAPIV3_1.SchemaObject | OpenAPIV3_1.ReferenceObject | boolean
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** The text of `api.ts` for an OpenAPI 3.1 document. */
export function generateClientTypes (spec: OpenAPIV3_1.Document): string {
  const out: string[] = [
    '// Generated from openapi.yaml by examples/openapi-client/generate.ts: do not edit.',
    '/* eslint-disable */',
    ''
  ]
  for (const [name, schema] of Object.entries(spec.components?.schemas ?? {})) {
    out.push(...doc(schema as Schema, ''), `export type ${name} = ${typeOf(schema as Schema, '')}`, '')
  }
  const ops: string[] = []
  const table: string[] = []
  for (const [path, item] of Object.entries(spec.paths ?? {})) {
    for (const method of METHODS) {
      const op = item?.[method]
      if (op?.operationId === undefined) continue
      table.push(`  ${op.operationId}: { method: '${method.toUpperCase()}', path: '${path}' },`)
      // The answers by status on one line (problems mostly): a body type of several lines stays as it is.
      const answers = Object.entries(op.responses ?? {}).map(([status, response]) => `${JSON.stringify(status)}: ${responseType(response as OpenAPIV3_1.ResponseObject)}`)
      ops.push(...doc({ description: op.summary } as Schema, '  '), `  ${op.operationId}: {`, `    input: ${inputOf(op, path)}`, `    responses: { ${answers.join('; ')} }`, '  }')
    }
  }
  out.push('/** Every operation by its operationId: what it takes and what each status answers. */', 'export interface Operations {', ...ops, '}', '')
  out.push('/** Each operation\'s method and path template. */', 'export const OPERATIONS = {', ...table, '} as const', '')
  return out.join('\n')
}

/** `{ params, query?, body }` of an operation; keys that must be given are required. */
function inputOf (op: OpenAPIV3_1.OperationObject, path: string): string {
  const parts: string[] = []
  const params = (op.parameters ?? []) as OpenAPIV3_1.ParameterObject[]
  const group = (where: string): string => {
    const fields = params.filter((p) => p.in === where)
      .map((p) => `${key(p.name)}${p.required === true || where === 'path' ? '' : '?'}: ${typeOf((p.schema ?? true) as Schema, '      ')}`)
    return `{ ${fields.join('; ')} }`
  }
  if (path.includes('{')) parts.push(`params: ${group('path')}`)
  if (params.some((p) => p.in === 'query')) parts.push(`query?: ${group('query')}`)
  const body = (op.requestBody as OpenAPIV3_1.RequestBodyObject | undefined)?.content?.['application/json']?.schema
  if (body !== undefined) parts.push(`body${(op.requestBody as OpenAPIV3_1.RequestBodyObject).required === true ? '' : '?'}: ${typeOf(body as Schema, '      ')}`)
  return `{ ${parts.join('; ')} }`
}

/** What a response's body is read as: its JSON (or problem) schema, text for a stream only, null for none. */
function responseType (response: OpenAPIV3_1.ResponseObject): string {
  const content = response.content ?? {}
  const json = content['application/json'] ?? content['application/problem+json']
  if (json?.schema !== undefined) return typeOf(json.schema as Schema, '      ')
  return Object.keys(content).length === 0 ? 'null' : 'string'
}

/** The TypeScript type of a JSON Schema (the subset toolgate's schemas use; anything else is unknown). */
export function typeOf (schema: Schema, indent: string): string {
  if (schema === true) return 'unknown'
  if (schema === false) return 'never'
  if ('$ref' in schema) return schema.$ref.replace('#/components/schemas/', '')
  const s = schema as OpenAPIV3_1.SchemaObject & { const?: unknown }
  if (s.const !== undefined) return JSON.stringify(s.const)
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ')
  const union = s.anyOf ?? s.oneOf
  if (union !== undefined) return union.map((x) => grouped(typeOf(x as Schema, indent))).join(' | ')
  if (s.allOf !== undefined) return s.allOf.map((x) => grouped(typeOf(x as Schema, indent))).join(' & ')
  const types = Array.isArray(s.type) ? s.type : s.type === undefined ? (s.properties !== undefined ? ['object'] : []) : [s.type]
  if (types.length === 0) return 'unknown'
  return types.map((t) => single(s, t, indent)).join(' | ')
}

/** A member of a union or intersection: in parentheses unless it is one name or literal. */
function grouped (type: string): string {
  return /^(?:[\w$]+|"[^"]*")$/.test(type) ? type : `(${type})`
}

function single (s: OpenAPIV3_1.SchemaObject, type: string, indent: string): string {
  switch (type) {
    case 'null': return 'null'
    case 'string': return 'string'
    case 'integer':
    case 'number': return 'number'
    case 'boolean': return 'boolean'
    case 'array': {
      const items = (s as OpenAPIV3_1.ArraySchemaObject).items
      return `Array<${items === undefined ? 'unknown' : typeOf(items as Schema, indent)}>`
    }
    case 'object': return objectType(s, indent)
    default: return 'unknown'
  }
}

function objectType (s: OpenAPIV3_1.SchemaObject, indent: string): string {
  const required = new Set(s.required ?? [])
  const properties = Object.entries(s.properties ?? {})
  const extra = s.additionalProperties
  // Undeclared members: none with `additionalProperties: false`, else any (typed when they alone make the object).
  const rest = extra === false ? null : properties.length === 0 && typeof extra === 'object' ? typeOf(extra as Schema, `${indent}  `) : 'unknown'
  if (properties.length === 0) return rest === null ? 'Record<string, never>' : `Record<string, ${rest}>`
  const inner = `${indent}  `
  const lines = properties.flatMap(([name, p]) => [
    ...doc(p as Schema, inner),
    `${inner}${key(name)}${required.has(name) ? '' : '?'}: ${typeOf(p as Schema, inner)}`
  ])
  if (rest !== null) lines.push(`${inner}[key: string]: ${rest}`)
  return `{\n${lines.join('\n')}\n${indent}}`
}

function key (name: string): string {
  return IDENTIFIER.test(name) ? name : JSON.stringify(name)
}

/** A schema's description as a one-paragraph TSDoc comment. */
function doc (schema: Schema, indent: string): string[] {
  if (typeof schema !== 'object' || '$ref' in schema) return []
  const text = schema.description?.replace(/\s+/g, ' ').replace(/\*\//g, '* /').trim()
  return text === undefined || text === '' ? [] : [`${indent}/** ${text} */`]
}

// Run directly (built, or its source with a TypeScript loader): reads the repository's openapi.yaml or the path given, writes api.ts.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = new URL(import.meta.url.includes('/dist/') ? '../../../' : '../../', import.meta.url)
  const spec = parse(await readFile(process.argv[2] ?? new URL('openapi.yaml', root), 'utf8')) as OpenAPIV3_1.Document
  const target = new URL('examples/openapi-client/api.ts', root)
  await writeFile(target, generateClientTypes(spec))
  console.log(`wrote ${fileURLToPath(target)}`)
}
