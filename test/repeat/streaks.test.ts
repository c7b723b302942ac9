import t from 'tap'
import { type ErrorStreak, errorEffect, errorsKind, stepErrors } from '../../src/repeat/kinds/errors.js'
import { type AnsweredCall, type NoProgressStreak, noProgressKind, stepNoProgress } from '../../src/repeat/kinds/no-progress.js'

type Seen = [index: number, action: 'advisory' | 'terminate', count: number]

function errorsOf (statuses: string[], thresholds = { advisory: 3, termination: 10 }, start: ErrorStreak = errorsKind.initial()) {
  let streak = start
  const seen: Seen[] = []
  for (const [i, status] of statuses.entries()) {
    const step = stepErrors(streak, { status, tool: `t${i % 2}` }, thresholds)
    streak = step.streak
    if (step.decision.action !== 'none') seen.push([i, step.decision.action, step.decision.count])
  }
  return { streak, seen }
}

const errorCases: Array<{ name: string, statuses: string, seen: Seen[], count: number }> = [
  { name: 'the third failure in a row gives the advisory', statuses: 'error rejected error error', seen: [[2, 'advisory', 3]], count: 4 },
  { name: 'the tenth failure in a row terminates', statuses: 'error '.repeat(10).trim(), seen: [[2, 'advisory', 3], [9, 'terminate', 10]], count: 10 },
  { name: 'an ok call breaks an error streak and the count starts over', statuses: 'error error ok error error', seen: [], count: 2 },
  { name: 'a streak broken by an ok call may advise again', statuses: 'error error error ok error error error', seen: [[2, 'advisory', 3], [6, 'advisory', 3]], count: 3 },
  { name: 'denied and blocked calls neither count nor reset', statuses: 'error denied error blocked error', seen: [[4, 'advisory', 3]], count: 3 },
  { name: 'uncertain, cancelled and terminated calls neither count nor reset', statuses: 'error uncertain error cancelled terminated error', seen: [[5, 'advisory', 3]], count: 3 },
  { name: 'rejections count like errors', statuses: 'rejected rejected rejected', seen: [[2, 'advisory', 3]], count: 3 }
]

for (const c of errorCases) {
  t.test(c.name, async (t) => {
    const out = errorsOf(c.statuses.split(' '))
    t.same(out.seen, c.seen)
    t.equal(out.streak.count, c.count)
  })
}

t.test('what each status does to an error streak', async (t) => {
  t.same(['ok', 'error', 'rejected', 'denied', 'blocked', 'uncertain', 'cancelled', 'terminated', 'projection_failed'].map(errorEffect),
    ['reset', 'count', 'count', 'skip', 'skip', 'skip', 'skip', 'skip', 'skip'])
})

t.test('an error streak names at most three distinct tools, the latest last', async (t) => {
  let streak = errorsKind.initial()
  for (const tool of ['a', 'b', 'a', 'c', 'd']) streak = stepErrors(streak, { status: 'error', tool }, { advisory: 0, termination: 0 }).streak
  t.same(streak.tools, ['a', 'c', 'd'])
})

t.test('an error streak continues across batches from the stored state, through JSON', async (t) => {
  const first = errorsOf(['error', 'error'])
  const stored = JSON.parse(JSON.stringify(first.streak)) as ErrorStreak
  t.same(errorsOf(['error'], undefined, stored).seen, [[0, 'advisory', 3]])
})

t.test('error limits of 0 disable both actions', async (t) => {
  t.same(errorsOf('error '.repeat(20).trim().split(' '), { advisory: 0, termination: 0 }).seen, [])
})

const poll = (content: string, extra: Partial<AnsweredCall> = {}): AnsweredCall =>
  ({ status: 'ok', tool: 'status', tracked: false, fingerprint: 'f'.repeat(64), content, ...extra })

function pollsOf (calls: AnsweredCall[], thresholds = { advisory: 10, termination: 30 }, start: NoProgressStreak = noProgressKind.initial()) {
  let streak = start
  const seen: Seen[] = []
  for (const [i, call] of calls.entries()) {
    const step = stepNoProgress(streak, call, thresholds)
    streak = step.streak
    if (step.decision.action !== 'none') seen.push([i, step.decision.action, step.decision.count])
  }
  return { streak, seen }
}

const same = (n: number, content = '{"state":"running"}'): AnsweredCall[] => Array.from({ length: n }, () => poll(content))

t.test('the tenth identical answer to an exempt call gives the advisory, the thirtieth terminates', async (t) => {
  t.same(pollsOf(same(30)).seen, [[9, 'advisory', 10], [29, 'terminate', 30]])
})

t.test('polling whose content changes never trips no_progress', async (t) => {
  const calls = Array.from({ length: 100 }, (_, i) => poll(JSON.stringify({ state: 'running', progress: i })))
  t.same(pollsOf(calls, { advisory: 2, termination: 3 }).seen, [])
})

t.test('polling a status that changes now and then starts the count over at each change', async (t) => {
  const calls = [...same(9, 'queued'), ...same(9, 'running'), ...same(9, 'done')]
  t.same(pollsOf(calls).seen, [])
})

t.test('other arguments start the count over', async (t) => {
  const calls = [...same(5), poll('{"state":"running"}', { fingerprint: 'e'.repeat(64) }), ...same(5)]
  t.same(pollsOf(calls).seen, [])
})

t.test('a tracked call that ran in between starts the count over', async (t) => {
  const calls = [...same(5), poll('done', { tool: 'write', tracked: true }), ...same(9)]
  t.same(pollsOf(calls).seen, [])
})

t.test('calls that did not run neither advance nor reset the count', async (t) => {
  const calls = [...same(5), poll('x', { tool: 'write', tracked: true, status: 'rejected' }), poll('x', { status: 'denied' }), ...same(5)]
  t.same(pollsOf(calls).seen, [[11, 'advisory', 10]])
})

t.test('tracked tools never form a no_progress streak', async (t) => {
  const calls = Array.from({ length: 40 }, () => poll('same', { tracked: true }))
  t.same(pollsOf(calls).seen, [])
})

t.test('identical failing answers count too: the poll itself is stuck', async (t) => {
  const calls = Array.from({ length: 10 }, () => poll('{"error":"busy"}', { status: 'error' }))
  t.same(pollsOf(calls).seen, [[9, 'advisory', 10]])
})

t.test('a no_progress streak continues across batches through JSON and advises once', async (t) => {
  const first = pollsOf(same(10))
  t.equal(first.seen.length, 1)
  const stored = JSON.parse(JSON.stringify(first.streak)) as NoProgressStreak
  t.same(pollsOf(same(5), undefined, stored).seen, [], 'one advisory per streak')
  t.notMatch(JSON.stringify(stored), /running/, 'the state keeps a hash of the content, not the content')
})
