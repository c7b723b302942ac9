/**
 * Regular expressions that match in time linear in their input (RE2's
 * automata, through the pure-JavaScript `re2js`), for every pattern a tool
 * definition brings: JSON Schema `pattern` and `patternProperties`, and the
 * regex literals of JSONata projections. JavaScript's own RegExp backtracks,
 * so a pattern such as `^(a+)+$` takes exponential time on a hostile string
 * and blocks the event loop of the whole service; these never backtrack.
 * Patterns RE2 cannot express (backreferences, lookaheads) are refused when
 * the tool is registered, not at the first call.
 */
import { RE2JS } from 're2js'
import { formatPointer } from './json-pointer.js'

/** A pattern RE2 cannot compile. */
export class UnsupportedPatternError extends Error {
  constructor (pattern: string, reason: string) {
    // The pattern is the tool author's text, not a model's argument: it may be named.
    super(`pattern ${JSON.stringify(pattern.length > 80 ? pattern.slice(0, 80) + '…' : pattern)} cannot be matched in linear time (${reason})`)
    this.name = 'UnsupportedPatternError'
  }
}

/**
 * Compiles an ECMAScript pattern (JSON Schema's dialect) for RE2; `flags`
 * are JavaScript's (`i`, `m`, `s`; `u`, `g` and `y` change nothing here).
 * Throws UnsupportedPatternError when RE2 cannot express it.
 */
export function compileLinear (pattern: string, flags = ''): RE2JS {
  let bits = 0
  if (flags.includes('i')) bits |= RE2JS.CASE_INSENSITIVE
  if (flags.includes('m')) bits |= RE2JS.MULTILINE
  if (flags.includes('s')) bits |= RE2JS.DOTALL
  try {
    return RE2JS.compile(RE2JS.translateRegExp(pattern), bits)
  } catch (err) {
    const reason = (err as { error?: unknown }).error
    throw new UnsupportedPatternError(pattern, typeof reason === 'string' ? reason : (err as Error).message)
  }
}

/** What Ajv needs of a regular expression: `test`, and a `toString` that names it in Ajv's cache. */
export interface LinearTester {
  test (input: string): boolean
  toString (): string
}

/**
 * Ajv's `code.regExp` engine: Ajv calls it with each schema pattern and its
 * flags (`u`) when it compiles a schema, and the compiled validator calls
 * `test` for every value.
 */
export const linearRegExp = Object.assign((pattern: string, flags: string): LinearTester => {
  const re = compileLinear(pattern, flags)
  const name = `re2/${pattern}/${flags}`
  return { test: (input: string) => re.test(input), toString: () => name }
}, { code: 'linearRegExp' })

/**
 * Every `pattern` and `patternProperties` key of a JSON Schema that RE2
 * cannot compile, as `/inputSchema/...: reason` lines. Values that are data,
 * not schemas (`const`, `enum`, `default`, `examples`), are not looked into.
 */
export function unsupportedPatterns (schema: unknown, root = '/inputSchema'): string[] {
  const problems: string[] = []
  const pending: Array<{ value: unknown, path: string[] }> = [{ value: schema, path: [] }]
  while (pending.length > 0) {
    const { value, path } = pending.pop()!
    if (value === null || typeof value !== 'object') continue
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push({ value: value[i], path: [...path, String(i)] })
      continue
    }
    const record = value as Record<string, unknown>
    if (typeof record.pattern === 'string') check(record.pattern, [...path, 'pattern'])
    const patternProperties = record.patternProperties
    if (patternProperties !== null && typeof patternProperties === 'object' && !Array.isArray(patternProperties)) {
      for (const key of Object.keys(patternProperties)) check(key, [...path, 'patternProperties', key])
    }
    for (const key of Object.keys(record).reverse()) {
      if (DATA_KEYWORDS.has(key)) continue
      pending.push({ value: record[key], path: [...path, key] })
    }
  }
  return problems

  function check (pattern: string, path: string[]): void {
    try {
      compileLinear(pattern, 'u')
    } catch (err) {
      problems.push(`${root}${formatPointer(path)}: ${(err as Error).message}`)
    }
  }
}

/** Schema keywords whose values are instances, never schemas. */
const DATA_KEYWORDS: ReadonlySet<string> = new Set(['const', 'enum', 'default', 'examples'])

/**
 * JSONata's `RegexEngine` option: jsonata constructs one per evaluation of a
 * regex literal, sets `lastIndex` and calls `exec`, as it would a global
 * RegExp. Indices are UTF-16 positions, as JavaScript's.
 */
export class LinearRegexEngine {
  lastIndex = 0
  readonly #re: RE2JS
  readonly source: string
  readonly flags: string

  constructor (regex: RegExp | string) {
    this.source = typeof regex === 'string' ? regex : regex.source
    this.flags = typeof regex === 'string' ? '' : regex.flags
    this.#re = compileLinear(this.source, this.flags)
  }

  exec (input: string): RegExpExecArray | null {
    if (this.lastIndex > input.length) {
      this.lastIndex = 0
      return null
    }
    const m = this.#re.matcher(input)
    if (!m.find(this.lastIndex)) {
      this.lastIndex = 0
      return null
    }
    const groups: Array<string | undefined> = [m.group(0) ?? '']
    for (let i = 1; i <= m.groupCount(); i++) groups.push(m.group(i) ?? undefined)
    const start = m.start()
    const end = m.end()
    this.lastIndex = end
    return Object.assign(groups, { index: start, input }) as unknown as RegExpExecArray
  }
}
