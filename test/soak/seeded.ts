import { createHash } from 'node:crypto'

/** A small seeded generator (mulberry32), so a failing soak can be replayed from its seed. */
export function random (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * A number in [0, 1) fixed by the seed and a key: decisions keyed by what
 * they are about (a run's call, an operation's n-th question) come out the
 * same on a replay, however concurrent work interleaves.
 */
export function keyed (seed: number): (key: string) => number {
  return (key) => createHash('sha256').update(`${seed}|${key}`).digest().readUInt32BE(0) / 4294967296
}
