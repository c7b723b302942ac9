/**
 * Recovery asks at most TOOLGATE_RECOVERY_CONCURRENCY status questions at
 * once (the rest queue), and an MCP server's idempotentHint is believed only
 * from a trusted server.
 */
import pino from 'pino'
import t from 'tap'
import { planImport, type ImportSettings } from '../../src/mcp/import.js'
import { MemoryStore } from '../../src/store/memory.js'
import { Recovery, type StatusAnswer } from '../../src/uncertain/recovery.js'
import type { UncertainResolver } from '../../src/uncertain/service.js'
import type { Uncertainty } from '../../src/model/uncertainty.js'
import { Attempts } from './support.js'
import { FakeClock } from '../clock.js'

t.test('recovery keeps at most `concurrency` questions in flight and asks every operation once the queue drains', async (t) => {
  const store = new MemoryStore({ runTtlMs: 60_000, maxRuns: 10, receiptRetentionMs: 60_000, maxReceipts: 10, sweepIntervalMs: 0 })
  t.teardown(() => store.close())
  const open = new Set(['op_1', 'op_2', 'op_3', 'op_4', 'op_5'])
  const resolver = {
    find: async (_runId: string, operationId: string) => open.has(operationId) ? ({ operationId } as Uncertainty) : undefined,
    resolve: async (_runId: string, operationId: string) => open.delete(operationId) ? { uncertainty: { operationId } as Uncertainty } : undefined
  } as unknown as UncertainResolver
  let inFlight = 0
  let peak = 0
  const answers: Array<() => void> = []
  const status = {
    ask: async (): Promise<StatusAnswer> => {
      peak = Math.max(peak, ++inFlight)
      await new Promise<void>((resolve) => answers.push(resolve))
      inFlight--
      return { kind: 'resolved', outcome: { status: 'committed' } }
    }
  }
  const attempts = new Attempts()
  const recovery = new Recovery({ store, resolver, status, logger: pino({ level: 'silent' }), owner: 'me', windowMs: 60_000, concurrency: 2, clock: new FakeClock(), onAttempt: attempts.hook })
  t.teardown(() => recovery.close())
  for (const operationId of open) recovery.start({ runId: 'r', operationId, statusUrl: 'http://127.0.0.1:1/status', timeoutMs: 1000 })
  recovery.start({ runId: 'r', operationId: 'op_1', statusUrl: 'http://127.0.0.1:1/status', timeoutMs: 1000 })
  t.equal(recovery.pending, 5, 'an operation already being recovered is not started twice')
  for (let done = 1; done <= 5; done++) {
    while (answers.length === 0) await new Promise((resolve) => setImmediate(resolve))
    t.ok(inFlight <= 2, `at most two in flight (${inFlight})`)
    answers.shift()!()
    t.equal((await attempts.until(done)).kind, 'resolved')
  }
  t.equal(peak, 2, 'the bound was reached, never passed')
  t.equal(open.size, 0, 'every operation was asked and resolved')
  t.equal(recovery.pending, 0)
})

const settings = (trust: ImportSettings['trust']): ImportSettings => ({ name: 'srv', trust, prefix: '', include: null, exclude: [], timeoutMs: 1000, overrides: {} })
const listed = [
  { name: 'upsert', inputSchema: { type: 'object' }, annotations: { idempotentHint: true } },
  { name: 'append', inputSchema: { type: 'object' }, annotations: { idempotentHint: false } },
  { name: 'plain', inputSchema: { type: 'object' } }
]

t.test("a trusted MCP server's idempotentHint makes its tool idempotent; an untrusted server's is ignored", async (t) => {
  const idempotent = (trust: ImportSettings['trust']) => Object.fromEntries(planImport(settings(trust), listed).definitions.map((d) => [d.remoteName, d.definition.idempotent === true]))
  t.same(idempotent('trusted'), { upsert: true, append: false, plain: false })
  t.same(idempotent('untrusted'), { upsert: false, append: false, plain: false })
})
