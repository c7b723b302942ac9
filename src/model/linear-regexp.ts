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
  const key = `${bits}/${pattern}`
  const known = COMPILED.get(key)
  if (known !== undefined) {
    // Most recently used last: the first entry is the one to drop.
    COMPILED.delete(key)
    COMPILED.set(key, known)
    return known
  }
  let re: RE2JS
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(pattern), bits)
  } catch (err) {
    const reason = (err as { error?: unknown }).error
    throw new UnsupportedPatternError(pattern, typeof reason === 'string' ? reason : (err as Error).message)
  }
  COMPILED.set(key, re)
  if (COMPILED.size > MAX_COMPILED) COMPILED.delete(COMPILED.keys().next().value!)
  return re
}

/**
 * Compiled patterns by flags and text, shared by every caller: a schema's
 * patterns are compiled once when its tool is checked (unsupportedPatterns)
 * and found again when Ajv compiles the schema (linearRegExp), where each
 * compile of a long pattern costs milliseconds. A compiled RE2JS holds no
 * state between matches, so one serves every schema naming the pattern.
 */
const COMPILED = new Map<string, RE2JS>()
const MAX_COMPILED = 4096

/**
 * An upper estimate of the instructions RE2 compiles an ECMAScript pattern
 * into, read from its text without compiling it: RE2 writes a counted
 * repeat out in full (`[a-z]{0,200}` is some 400 instructions), and its
 * compile time grows with them (about 3 ms for 400 in re2js, a third of a
 * second for one pattern of 40,000), so a schema's patterns are weighed by
 * this before any is compiled (schema-cost.ts), and matching a string costs
 * at most its length times this. Each atom (a character, escape or class)
 * counts 1, a quantifier adds 1 and multiplies what it repeats by its
 * largest count, groups and alternatives add up.
 */
export function patternCost (pattern: string): number {
  let i = 0
  const alternatives = (): number => {
    let total = sequence()
    while (pattern[i] === '|') {
      i++
      total += 1 + sequence()
    }
    return total
  }
  const sequence = (): number => {
    let total = 0
    while (i < pattern.length && pattern[i] !== '|' && pattern[i] !== ')') total += quantified(atom())
    return total
  }
  const atom = (): number => {
    const c = pattern[i++]
    if (c === '(') {
      const inner = alternatives()
      if (pattern[i] === ')') i++
      return 1 + inner
    }
    if (c === '[') {
      if (pattern[i] === '^') i++
      if (pattern[i] === ']') i++
      while (i < pattern.length && pattern[i] !== ']') i += pattern[i] === '\\' ? 2 : 1
      i++
      return 1
    }
    if (c === '\\') {
      const e = pattern[i++]
      if ((e === 'p' || e === 'P' || e === 'u') && pattern[i] === '{') while (i < pattern.length && pattern[i - 1] !== '}') i++
      return 1
    }
    return 1
  }
  const quantified = (size: number): number => {
    const c = pattern[i]
    let total = size
    if (c === '*' || c === '+' || c === '?') {
      i++
      total = size + 1
    } else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i, i + 24))
      if (m === null) return size
      i += m[0].length
      const most = Math.max(Number(m[1]), m[3] === undefined || m[3] === '' ? Number(m[1]) + 1 : Number(m[3]))
      total = Math.min(size * most + most, Number.MAX_SAFE_INTEGER)
    } else {
      return size
    }
    if (pattern[i] === '?') i++
    return total
  }
  // The program's own start and match instructions.
  let total = 2
  // A `)` without its `(` ends a sequence: count on past it (RE2 refuses the pattern anyway).
  while (i < pattern.length) {
    total += alternatives()
    if (pattern[i] === ')') i++
  }
  return total
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
