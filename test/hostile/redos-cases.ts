/** Shared by the pattern tests: hostile inputs for the classic ReDoS patterns. */

/** Classic catastrophic-backtracking patterns (OWASP's ReDoS list and friends) with an input that makes JavaScript's RegExp take exponential time. */
export const REDOS_CASES: ReadonlyArray<{ pattern: string, hostile: string }> = [
  { pattern: '^(a+)+$', hostile: 'a'.repeat(10_000) + '!' },
  { pattern: '^([a-zA-Z]+)*$', hostile: 'a'.repeat(10_000) + '!' },
  { pattern: '^(a|aa)+$', hostile: 'a'.repeat(10_000) + '!' },
  { pattern: '^(a|a?)+$', hostile: 'a'.repeat(10_000) + '!' },
  { pattern: '^(.*a){12}$', hostile: 'a'.repeat(10_000) + '!' },
  { pattern: '^(\\w+\\s?)*$', hostile: 'word '.repeat(2_000) + '!' },
  { pattern: '^(([a-z])+.)+[A-Z]([a-z])+$', hostile: 'a'.repeat(10_000) + '!' },
  { pattern: '^([a-zA-Z0-9])(([\\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$', hostile: 'a'.repeat(10_000) + '!' }
]
