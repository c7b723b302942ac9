import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProblemError } from '../src/errors.js'
import { principalOf } from '../src/http/auth.js'
import type { Services } from '../src/services.js'
import type { ResolvedStatus } from '../src/uncertain/types.js'
import type { Uncertainty } from '../src/model/uncertainty.js'
import { RunIdParams } from '../schemas/common.js'
import { answer, problems } from '../schemas/responses.js'
import { OperationIdParams } from '../schemas/receipt.js'
import { ResolveBody, Resolution, TenantUncertainList, UncertainList } from '../schemas/uncertain.js'

const access = { roles: ['orchestrator', 'operator'] as const }

/** Unresolved uncertain writes (SPEC section 14): listed per run, resolved by hand or by asking the status URL again. */
export const uncertainRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { runs, uncertain } = services

  app.get('/v1/runs/:runId/uncertain', {
    config: access,
    schema: {
      tags: ['receipts'],
      operationId: 'listRunUncertainWrites',
      summary: "A run's unresolved uncertain writes, oldest first",
      description: 'Writes of the run whose outcome is unknown and that nothing has resolved yet: a later write with the same tool and prepared arguments is `blocked` (`unresolved_uncertain_write`) until one is resolved.',
      params: RunIdParams,
      response: { 200: answer(UncertainList, "The run's unresolved uncertain writes."), ...problems('run_not_found') }
    }
  }, async (req) => {
    const run = await runs.get(principalOf(req).tenant, req.params.runId)
    return { runId: run.runId, uncertain: (run.uncertain ?? []).map(view) }
  })

  app.get('/v1/uncertain', {
    config: access,
    schema: {
      tags: ['receipts'],
      operationId: 'listTenantUncertainWrites',
      summary: "The tenant's unresolved uncertain writes, oldest first",
      description: 'Writes of every run of the caller\'s tenant whose outcome is unknown and that nothing has resolved yet. One whose tool has `conflictScope: "tenant"` blocks later writes with its conflict key from every run of the tenant (`unresolved_uncertain_write`, `blockedByRun`) until it is resolved.',
      response: { 200: answer(TenantUncertainList, "The tenant's unresolved uncertain writes.") }
    }
  }, async (req) => {
    const listed = await services.store.listTenantUncertain(principalOf(req).tenant)
    return {
      uncertain: listed.map((u) => ({
        operationId: u.operationId, runId: u.runId, callId: u.callId, tool: u.tool, conflictKey: u.conflictKey,
        conflictScope: u.tenantScoped ? 'tenant' as const : 'run' as const, cause: u.cause, since: new Date(u.since).toISOString()
      }))
    }
  })

  app.post('/v1/receipts/:operationId/resolve', {
    config: access,
    schema: {
      tags: ['receipts'],
      operationId: 'resolveUncertainWrite',
      summary: 'Resolves an unresolved uncertain write',
      description: "By hand (`{\"status\", \"result\"?}`: an action's receipt is settled with disposition `resolved`), or by asking the tool's `executor.statusUrl` now (`{\"recheck\": true}`). Resolution sends nothing; afterwards the same call is a plain new call.",
      params: OperationIdParams,
      body: ResolveBody,
      response: { 200: answer(Resolution, 'Whether it is resolved now, how, and the settled receipt of an action.'), ...problems('operation_not_found', 'operation_not_uncertain', 'no_status_url') }
    }
  }, async (req) => {
    const { operationId } = req.params
    const tenant = principalOf(req).tenant
    const found = await locate(services, operationId, tenant).catch(async (err: unknown) => {
      // Listed for the tenant only: a write whose replica died holding its tenant key, before any replica
      // took its run over; or a tenant-scoped write whose run is gone (it blocks its key until resolved).
      const lost = err instanceof ProblemError ? (await services.store.listTenantUncertain(tenant)).find((u) => u.operationId === operationId) : undefined
      if (lost === undefined) throw err
      return lost
    })
    const body = req.body
    if (!('entry' in found)) {
      if ('recheck' in body) {
        throw new ProblemError('no_status_url', `Operation ${operationId} is known only to its tenant's list: its run is gone, or it was lost with its replica before its run recorded it. Resolve it with a status instead.`)
      }
      await services.store.forgetTenantUncertain(tenant, [operationId])
      return { operationId, runId: found.runId, resolved: true, how: 'manual' as const, status: body.status }
    }
    const { runId, entry } = found
    if ('recheck' in body) {
      const target = uncertain.targetOf(runId, entry)
      if (target === undefined) throw new ProblemError('no_status_url', `Tool ${entry.tool} has no executor.statusUrl; resolve it with a status instead.`)
      const outcome = await uncertain.recovery.recheck(target)
      switch (outcome.kind) {
        case 'resolved': return withReceipt({ operationId, runId, resolved: true, how: 'status_url' as const, status: (outcome.resolved.receipt?.status ?? outcome.status) as ResolvedStatus }, outcome.resolved.receipt)
        case 'unknown': return { operationId, runId, resolved: false, check: 'unknown' as const }
        case 'busy': return { operationId, runId, resolved: false, check: 'busy' as const }
        case 'error': return { operationId, runId, resolved: false, check: 'error' as const, cause: outcome.cause }
        case 'gone': throw notUncertain(operationId)
      }
    }
    const outcome = body.stateRevision === undefined
      ? (body.result === undefined ? { status: body.status } : { status: body.status, result: body.result })
      : { status: body.status, stateRevision: body.stateRevision, ...(body.result === undefined ? {} : { result: body.result }) }
    const resolved = await uncertain.resolver.resolve(runId, operationId, outcome, 'manual')
    // Another resolution came first.
    if (resolved === undefined) throw notUncertain(operationId)
    return withReceipt({ operationId, runId, resolved: true, how: 'manual' as const, status: body.status }, resolved.receipt)
  })

}

/**
 * The run of an operation that is an unresolved uncertainty of the caller's
 * tenant. Unknown, or another tenant's: 404. Known (a receipt of the
 * tenant's, or an uncertain write of a run of the tenant, resolved since)
 * but not unresolved: 409.
 */
async function locate ({ store }: Services, operationId: string, tenant: string): Promise<{ runId: string, entry: Uncertainty }> {
  let runId = await store.runOfUncertain(operationId)
  let known = false
  if (runId === undefined) {
    const stored = await store.getReceipt(operationId)
    if (stored !== undefined && stored.tenant === tenant) {
      runId = stored.receipt.runId
      known = true
    }
  }
  const run = runId === undefined ? undefined : await store.getRun(runId)
  if (run === undefined || run.tenant !== tenant) {
    if (known) throw notUncertain(operationId)
    throw new ProblemError('operation_not_found', `No operation ${operationId}`)
  }
  const entry = run.uncertain?.find((u) => u.operationId === operationId)
  if (entry === undefined) throw notUncertain(operationId)
  return { runId: run.runId, entry }
}

function notUncertain (operationId: string): ProblemError {
  return new ProblemError('operation_not_uncertain', `Operation ${operationId} is not an unresolved uncertain write (it was resolved, or never uncertain).`)
}

function withReceipt<T extends object> (answer: T, receipt: unknown): T {
  return receipt === undefined ? answer : { ...answer, receipt }
}

function view (u: Uncertainty): { operationId: string, callId: string, batchId: string, tool: string, fingerprint: string, conflictKey: string | null, action: boolean, since: string } {
  return { operationId: u.operationId, callId: u.callId, batchId: u.batchId, tool: u.tool, fingerprint: u.fingerprint, conflictKey: u.conflictKey, action: u.action, since: new Date(u.since).toISOString() }
}
