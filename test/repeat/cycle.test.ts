import t from 'tap'
import { type CycleCall, type CycleState, cycleKind, trackCycles } from '../../src/repeat/kinds/cycle.js'

const DEFAULTS = { advisory: 3, termination: 6 }
const fp = (letter: string): string => letter.repeat(64)
/** A tracked call of tool `letter` whose fingerprint is `letter` repeated; `-` marks an exempt call. */
const calls = (pattern: string): CycleCall[] => pattern.split(' ').map((token) => token.endsWith('-')
  ? { fingerprint: fp(token[0]!), tool: token[0]!, tracked: false }
  : { fingerprint: fp(token), tool: token })

type Hit = [index: number, action: 'advisory' | 'terminate', repetitions: number, tools: string]

interface Case {
  name: string
  calls: string
  state?: CycleState
  thresholds?: { advisory: number, termination: number }
  hits: Hit[]
  terminatedAt?: number | null
}

function walk (c: Pick<Case, 'calls' | 'state' | 'thresholds'>) {
  return trackCycles(c.state ?? cycleKind.initial(), calls(c.calls), c.thresholds ?? DEFAULTS)
}

const cases: Case[] = [
  {
    name: 'a period-2 cycle gives its advisory when the third repetition completes',
    calls: 'a b a b a b a b',
    hits: [[5, 'advisory', 3, 'a→b']]
  },
  {
    name: 'a period-2 cycle is terminated at the call that completes the sixth repetition',
    calls: 'a b a b a b a b a b a b a b',
    hits: [[5, 'advisory', 3, 'a→b'], [11, 'terminate', 6, 'a→b']],
    terminatedAt: 11
  },
  {
    name: 'a period-3 cycle counts whole repetitions of three calls',
    calls: 'a b c a b c a b c a b c a b c a b c',
    hits: [[8, 'advisory', 3, 'a→b→c'], [17, 'terminate', 6, 'a→b→c']],
    terminatedAt: 17
  },
  {
    name: 'a period-3 cycle with a call repeated inside it is still a cycle',
    calls: 'a a b a a b a a b',
    hits: [[8, 'advisory', 3, 'a→a→b']]
  },
  {
    name: 'a different call breaks the cycle and the count starts over',
    calls: 'a b a b a c a b a b a b',
    hits: [[11, 'advisory', 3, 'a→b']]
  },
  {
    name: 'a broken cycle may give a new advisory once it builds up again',
    calls: 'a b a b a b c a b a b a b',
    hits: [[5, 'advisory', 3, 'a→b'], [12, 'advisory', 3, 'a→b']]
  },
  {
    name: 'exempt calls inside a cycle neither advance nor break it',
    calls: 'a p- b a q- b p- p- a p- b',
    hits: [[10, 'advisory', 3, 'a→b']]
  },
  {
    name: 'an exact repeat is not a cycle of any period',
    calls: 'a a a a a a a a a a a a',
    hits: []
  },
  {
    name: 'a cycle that turns into an exact repeat stops counting',
    calls: 'a b a b a a a a',
    hits: []
  },
  {
    name: 'calls that keep changing never form a cycle',
    calls: 'a b c d e f g h i j k l',
    hits: []
  },
  {
    name: 'two repetitions are the least a limit can ask for',
    calls: 'a b a b',
    thresholds: { advisory: 1, termination: 0 },
    hits: [[3, 'advisory', 2, 'a→b']]
  },
  {
    name: 'limits of 0 disable both actions',
    calls: 'a b a b a b a b a b a b a b',
    thresholds: { advisory: 0, termination: 0 },
    hits: []
  },
  {
    name: 'equal limits terminate rather than advise',
    calls: 'a b a b a b',
    thresholds: { advisory: 3, termination: 3 },
    hits: [[5, 'terminate', 3, 'a→b']],
    terminatedAt: 5
  },
  {
    name: 'the walk stops at the termination: later calls are not counted',
    calls: 'a b a b a b a b',
    thresholds: { advisory: 0, termination: 2 },
    hits: [[3, 'terminate', 2, 'a→b']],
    terminatedAt: 3
  }
]

for (const c of cases) {
  t.test(c.name, async (t) => {
    const out = walk(c)
    const hits = out.hits.flatMap((h, i) => h === null ? [] : [[i, h.decision.action, h.decision.count, h.tools.join('→')]])
    t.same(hits, c.hits)
    t.equal(out.terminatedAt, c.terminatedAt ?? null)
  })
}

t.test('a cycle continues across batches from the stored state', async (t) => {
  const first = walk({ calls: 'a b a b' })
  t.same(first.hits.filter(Boolean), [])
  const second = walk({ calls: 'a b', state: first.state })
  t.same(second.hits.map((h) => h?.decision ?? null), [null, { action: 'advisory', count: 3 }])
  const third = walk({ calls: 'a b', state: second.state })
  t.same(third.hits, [null, null], 'one advisory per streak')
})

t.test('the state round-trips through JSON as a shared store keeps it', async (t) => {
  const first = walk({ calls: 'a b c a b' })
  const stored = JSON.parse(JSON.stringify(first.state)) as CycleState
  t.same(walk({ calls: 'c a b c', state: stored }).hits.filter(Boolean).length, 1)
})

t.test('the state given is never changed', async (t) => {
  const state = cycleKind.initial()
  const before = JSON.stringify(state)
  walk({ calls: 'a b a b a b', state })
  t.equal(JSON.stringify(state), before)
})

t.test('a bad limit is refused with a message naming it', async (t) => {
  t.throws(() => walk({ calls: 'a', thresholds: { advisory: -1, termination: 6 } }), /thresholds\.advisory/)
})
