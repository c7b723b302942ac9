/**
 * What a person deciding on a held call sees beside it (the approvals inbox,
 * the page's approval cards): what the tool is, what else its batch holds and
 * what the run did just before. Tool names and statuses only: the held call's
 * own arguments are the only arguments the inbox shows.
 */
import type { BatchResponse } from '../model/result.js'
import type { WaitingBatch } from '../model/waiting.js'
import type { BatchEntry } from '../store/types.js'

/** One other call, by id, tool and where it stands. */
export interface CallBrief { callId: string, tool: string, status: string }

/** A call of an earlier batch of the run. */
export interface RecentCall extends CallBrief { batchId: string, turn: number }

/** Beside a held call: the tool's description, the batch's other calls, the run's latest calls before it. */
export interface ApprovalContext {
  description?: string
  batch: CallBrief[]
  recent?: RecentCall[]
}

/** How many of the run's latest calls an inbox entry shows. */
export const RECENT_CALLS = 5

/**
 * The calls of a waiting batch as they stand: `awaiting_approval` (held, no
 * decision yet), `approved` or `denied` (decided), `waiting` (needs no
 * decision: runs once the batch does), `rejected` (preparation refused it).
 */
export function batchCalls (w: WaitingBatch): CallBrief[] {
  const { calls, approvals } = w.state
  return w.state.outcomes.map((o, i) => {
    const call = calls[i]
    const callId = call?.id ?? ''
    const tool = o.tool ?? call?.name ?? ''
    const held = approvals.held[i]
    if (!o.ok) return { callId, tool, status: 'rejected' }
    if (held?.decision !== undefined) return { callId, tool, status: held.decision.approve ? 'approved' : 'denied' }
    return { callId, tool, status: held != null ? 'awaiting_approval' : 'waiting' }
  })
}

/** What the run's finished batches store: their summaries, and one's answer. */
export interface BatchReader {
  listBatches (runId: string): Promise<BatchEntry[]>
  getBatch (runId: string, batchId: string): Promise<{ responseJson: string } | undefined>
}

/**
 * The run's last `limit` calls before the waiting batch, latest last, from
 * its finished batches' stored answers (their latest turns only, read until
 * `limit` calls are found).
 */
export async function recentCalls (store: BatchReader, runId: string, limit = RECENT_CALLS): Promise<RecentCall[]> {
  const batches = (await store.listBatches(runId)).sort((a, b) => b.turn - a.turn)
  const out: RecentCall[] = []
  for (const b of batches) {
    if (out.length >= limit) break
    const record = await store.getBatch(runId, b.batchId)
    if (record === undefined) continue
    const answer = JSON.parse(record.responseJson) as Pick<BatchResponse, 'results'>
    const calls = (answer.results ?? []).map((r) => ({ batchId: b.batchId, turn: b.turn, callId: r.callId, tool: r.details?.tool ?? r.name, status: r.status }))
    out.unshift(...calls.slice(-(limit - out.length)))
  }
  return out
}
