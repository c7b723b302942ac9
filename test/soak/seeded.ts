import { createHash } from 'node:crypto'

export { seededRandom as random } from '../seed.js'

/**
 * A number in [0, 1) fixed by the seed and a key: decisions keyed by what
 * they are about (a run's call, an operation's n-th question) come out the
 * same on a replay, however concurrent work interleaves.
 */
export function keyed (seed: number): (key: string) => number {
  return (key) => createHash('sha256').update(`${seed}|${key}`).digest().readUInt32BE(0) / 4294967296
}
