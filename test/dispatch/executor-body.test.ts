import fc from 'fast-check'
import t from 'tap'
import { executorBody, executorBodyPrefix } from '../../src/dispatch/executor-body.js'
import { IsoTime } from '../../src/iso-time.js'
import type { PreparedCall } from '../../src/model/call.js'
import { operationId } from '../../src/receipts/operation-id.js'
import { fingerprint } from '../../src/repeat/exact.js'
import { runs, seeded } from '../seed.js'

t.test('writes exactly what JSON.stringify writes for the body object, whatever the ids, names and arguments', async (t) => {
  const iso = new IsoTime()
  fc.assert(fc.property(
    fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }),
    fc.dictionary(fc.string({ unit: 'binary' }), fc.jsonValue({ stringUnit: 'binary', maxDepth: 3 })),
    fc.integer({ min: 0, max: 253402300799999 }),
    (runId, batchId, callId, tool, args, deadlineMs) => {
      const call = { id: callId, tool: { name: tool }, arguments: args } as unknown as PreparedCall
      const opId = operationId({ runId, tenant: 't', createdAt: deadlineMs }, callId, fingerprint(tool, args))
      const deadline = iso.at(deadlineMs)
      const expected = JSON.stringify({ runId, batchId, callId, tool, arguments: args, operationId: opId, deadline })
      const prefix = executorBodyPrefix(runId, batchId)
      return executorBody(prefix, call, opId, deadline) === expected &&
        executorBody(prefix, call, opId, deadline, JSON.stringify(args)) === expected
    }
  ), seeded(t, { numRuns: runs(500, 2000) }))
})
