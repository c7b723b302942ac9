/**
 * How a run record is kept in its Redis hash (`P run:<id>`, see
 * redis-scripts.ts): in two parts, so that an ordinary update decodes and
 * writes only the small part a batch changes.
 *
 * - `c`, the cold part: the run's id, tenant, options and creation time,
 *   written when the run is created (and by the rare write that changes
 *   one of them). The store keeps it decoded per run, frozen, so an update
 *   neither decodes nor sends it.
 * - `h`, the hot part: every other field of the record (state, counters,
 *   streaks, lease, waiting batch, figures, last use), written by every
 *   update.
 * - `lo`, `lb`, `le`: the lease's owner, batch id and expiry, copied out of
 *   the hot part for the scripts that check it without decoding anything.
 *
 * A run written by an earlier version of toolgate holds its whole record as
 * one JSON field `r` instead: it is read as such, and the first write of
 * it in the new form deletes `r` (so `r`, when present, is always the
 * newest form of the record).
 */
import type { RunRecord } from '../model/run.js'
import { readWaiting } from './records.js'

/** The part of a run record written at creation only. */
export interface ColdPart {
  readonly runId: string
  readonly tenant: string
  readonly options: RunRecord['options']
  readonly createdAt: number
}

/** A run as read from its hash: the cold part decoded (and its JSON, to tell it unchanged), the hot part as stored. */
export interface StoredRun {
  cold: ColdPart
  coldJson: string
  hotJson: string
  /** False when the hash holds no cold part yet (a record of the earlier form): the next write sends it. */
  coldStored: boolean
}

/** The run as one record: the hot part decoded, the cold part's (frozen) fields set on it. */
export function joinRun (stored: StoredRun): RunRecord {
  const run = JSON.parse(stored.hotJson) as RunRecord
  const { cold } = stored
  run.runId = cold.runId
  run.tenant = cold.tenant
  run.options = cold.options
  run.createdAt = cold.createdAt
  return readWaiting(run)
}

/** Whether `run` still carries the cold part it was joined with (it is frozen, so only a new value can change it). */
export function sameCold (run: RunRecord, cold: ColdPart): boolean {
  return run.runId === cold.runId && run.tenant === cold.tenant && run.options === cold.options && run.createdAt === cold.createdAt
}

/** The hot part's JSON: the record without its cold fields. */
export function hotJsonOf (run: RunRecord): string {
  const { runId: _runId, tenant: _tenant, options: _options, createdAt: _createdAt, ...hot } = run
  return JSON.stringify(hot)
}

/** The cold part's JSON. */
export function coldJsonOf (run: RunRecord): string {
  return JSON.stringify({ runId: run.runId, tenant: run.tenant, options: run.options, createdAt: run.createdAt })
}

/** Decodes a cold part, frozen to the leaves: it is shared by every update of the run from here. */
export function decodeCold (json: string): ColdPart {
  return deepFreeze(JSON.parse(json) as ColdPart)
}

/**
 * A run from its hash's fields `h`, `c` and `r` (null when absent);
 * undefined when the run is gone. `known` is a cold part already decoded
 * (the one kept for the run), used again when its JSON is the one read.
 */
export function decodeStored (hot: unknown, cold: unknown, whole: unknown, known?: StoredRun): StoredRun | undefined {
  if (typeof whole === 'string' && whole !== '') {
    const run = JSON.parse(whole) as RunRecord
    const coldJson = coldJsonOf(run)
    return { cold: known?.coldJson === coldJson ? known.cold : decodeCold(coldJson), coldJson, hotJson: hotJsonOf(run), coldStored: false }
  }
  if (typeof hot !== 'string' || typeof cold !== 'string') return undefined
  return { cold: known?.coldJson === cold ? known.cold : decodeCold(cold), coldJson: cold, hotJson: hot, coldStored: true }
}

/** The lease's fields for the scripts: expiry ('' for none), owner, batch id. */
export function leaseFields (run: RunRecord): [string, string, string] {
  const lease = run.inFlight
  return lease === null ? ['', '', ''] : [String(Math.ceil(lease.leaseExpiresAt)), lease.owner, lease.batchId]
}

function deepFreeze<T> (value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner)
    Object.freeze(value)
  }
  return value
}
