import { performance } from 'node:perf_hooks'
import type { Registry } from 'prom-client'
import type { ExternalAuthorizer } from '../prepare/authorize.js'
import { FastCounter } from './counter.js'
import { FastHistogram } from './histogram.js'

/** How an external authorizer answered: it allowed the call, its policy denied it, or it gave no decision (unreachable, late, unreadable: the call is refused). */
export const AUTHORIZER_DECISIONS = ['allow', 'deny', 'no_decision'] as const

/**
 * The external authorizer's metrics, taken from outside it: the time of
 * each decision (`toolgate_authorizer_duration_seconds`) and the decisions
 * by kind (`toolgate_authorizer_decisions_total`), denials and failures to
 * decide among them. The input (with the call's arguments) is passed on untouched.
 */
export function meteredAuthorizer (inner: ExternalAuthorizer, registry: Registry): ExternalAuthorizer {
  const registers = [registry]
  const duration = new FastHistogram({
    name: 'toolgate_authorizer_duration_seconds',
    help: 'Time the external authorizer took to decide on one call (or to fail to).',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers
  })
  const decisions = new FastCounter({ name: 'toolgate_authorizer_decisions_total', help: 'Decisions of the external authorizer: allow, deny (its policy refused the call), no_decision (unreachable, late or unreadable; the call is refused).', labelNames: ['decision'], registers })
  for (const d of AUTHORIZER_DECISIONS) decisions.zero([d])
  return async (input) => {
    const t0 = performance.now()
    let decision: typeof AUTHORIZER_DECISIONS[number] = 'no_decision'
    try {
      const result = await inner(input)
      decision = result.ok ? 'allow' : result.reason === 'policy_denied' ? 'deny' : 'no_decision'
      return result
    } finally {
      duration.observe((performance.now() - t0) / 1000)
      decisions.inc([decision])
    }
  }
}
