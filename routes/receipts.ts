import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProblemError } from '../src/errors.js'
import { principalOf } from '../src/http/auth.js'
import type { Services } from '../src/services.js'
import { RunIdParams, problems } from '../schemas/common.js'
import { OperationIdParams, ReceiptList } from '../schemas/receipt.js'
import { answer } from '../schemas/responses.js'
import { RECEIPT_EXAMPLE } from '../schemas/examples.js'

const orchestrator = { roles: ['orchestrator'] as const }

/** The action journal (SPEC section 7); a receipt is visible only to its run's tenant. */
export const receiptRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { runs, store } = services

  app.get('/v1/runs/:runId/receipts', {
    config: orchestrator,
    schema: {
      tags: ['receipts'],
      operationId: 'listRunReceipts',
      summary: "A run's receipts, in dispatch order",
      description: 'The canonical receipts of the action calls this run dispatched, pending ones (`uncertain`, no answer recorded yet) included.',
      params: RunIdParams,
      response: { 200: answer(ReceiptList, "The run's receipts.", { receipts: [RECEIPT_EXAMPLE] }), ...problems('run_not_found') }
    }
  }, async (req) => {
    await runs.get(principalOf(req).tenant, req.params.runId)
    return { receipts: await store.listReceipts(req.params.runId) }
  })

  app.get('/v1/receipts/:operationId', {
    config: orchestrator,
    schema: {
      tags: ['receipts'],
      operationId: 'getReceipt',
      summary: 'One receipt',
      description: "The canonical receipt of one operation. A receipt of another tenant's run is `404 run_not_found`, as a missing one.",
      params: OperationIdParams,
      response: { 200: answer(Type.Ref('Receipt'), 'The receipt.', RECEIPT_EXAMPLE), ...problems('run_not_found') }
    }
  }, async (req) => {
    const stored = await store.getReceipt(req.params.operationId)
    // Another tenant's receipt does not exist for this one: same answer as a missing one.
    if (stored === undefined || stored.tenant !== principalOf(req).tenant) {
      throw new ProblemError('run_not_found', `No receipt ${req.params.operationId}`)
    }
    return stored.receipt
  })
}
