/**
 * The seed of the random tests, so a failure can be replayed: every property
 * test and seeded generator takes it from here. `TOOLGATE_TEST_SEED` sets it;
 * unset, each test process draws a fresh one. Tests print the seed they ran
 * with (`# random seed …`), and fast-check names it again in a failure.
 */
import type { Parameters } from 'fast-check'

export const SEED_VARIABLE = 'TOOLGATE_TEST_SEED'

/** The largest seed: fast-check and the generator below take 31-bit seeds. */
const MAX_SEED = 2 ** 31 - 1

/** The seed `env` gives, or a fresh one when it gives none. */
export function seedFrom (env: Readonly<Record<string, string | undefined>>): number {
  const given = env[SEED_VARIABLE]
  if (given === undefined || given.trim() === '') return Math.floor(Math.random() * MAX_SEED)
  const seed = Number(given)
  if (!Number.isSafeInteger(seed) || seed < 0 || seed > MAX_SEED) {
    throw new TypeError(`Expected \`${SEED_VARIABLE}\` to be an integer from 0 to ${MAX_SEED}, got ${given}`)
  }
  return seed
}

/** This test process's seed. */
export const SEED = seedFrom(process.env)

export const RUNS_VARIABLE = 'TOOLGATE_TEST_RUNS'

/**
 * Whether `env` asks for the random tests' full counts: `TOOLGATE_TEST_RUNS=full`.
 * Unset, the suite runs the smaller counts, enough to exercise every path
 * the generators reach on every run; the full counts hunt rare cases longer.
 */
export function fullRunsFrom (env: Readonly<Record<string, string | undefined>>): boolean {
  const given = env[RUNS_VARIABLE]
  if (given === undefined || given.trim() === '') return false
  if (given === 'full') return true
  throw new TypeError(`Expected \`${RUNS_VARIABLE}\` to be "full" or unset, got ${given}`)
}

/** How many cases a random test runs: `suite` in the suite, `full` with `TOOLGATE_TEST_RUNS=full`. */
export function runs (suite: number, full: number, env: Readonly<Record<string, string | undefined>> = process.env): number {
  return fullRunsFrom(env) ? full : suite
}

/** How a test prints its seed (tap's `t.comment`). */
interface Commenter { comment: (message: string) => void }

/** Prints the seed, and answers fast-check parameters that run with it. */
export function seeded<T> (t: Commenter, params: Parameters<T> = {}): Parameters<T> {
  t.comment(`random seed ${SEED} (replay with ${SEED_VARIABLE}=${SEED})`)
  return { ...params, seed: SEED }
}

/** A small seeded generator of numbers in [0, 1) (mulberry32), for tests that draw without fast-check. */
export function seededRandom (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}
