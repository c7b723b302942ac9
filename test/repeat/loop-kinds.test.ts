/**
 * A loop kind is its definition and its line in the registered list
 * (src/repeat/kinds/): a made-up kind, added to a list built here and to
 * nothing else, gets its run limits in the run schemas, its settings in the
 * configuration, its termination reason, its loop counts and metric labels,
 * and a run it terminates answers with its reason and its text.
 */
import t from 'tap'
import { runSchemas } from '../../schemas/run.js'
import { loopDetectionsSchema } from '../../schemas/summary.js'
import { ConfigError, loadConfig, settingsWith } from '../../src/config.js'
import { loopsGuardOf } from '../../src/guards/loops.js'
import { LOOP_KIND_LIST } from '../../src/repeat/kinds/index.js'
import { type ResultsLoopKind, decide, defaultLoopLimits, emptyLoopCounts, initialLoopState, loopKindNames } from '../../src/repeat/loops.js'
import { resolveRunOptions } from '../../src/runs/options.js'
import { addStats, emptyStats } from '../../src/runs/stats.js'
import { Metrics } from '../../src/telemetry/metrics.js'
import { summarize } from '../../src/telemetry/summary.js'
import { buildTestApp, post, startExecutor, tool } from '../helper.js'
import { parse, scrape } from '../telemetry/scrape.js'

interface SameToolStreak { tool: string | null, count: number, advised: boolean }

const TERMINATED = 'Not run: the agent called the same tool too many times in a row, so the run was stopped.'

/** A made-up kind: the same tool called again and again, whatever its arguments. */
const sameTool: ResultsLoopKind<SameToolStreak> = {
  name: 'same_tool',
  reason: 'same_tool_streak',
  stateKey: 'sameTool',
  limits: {
    advisory: { name: 'sameToolAdvisory', env: 'TOOLGATE_SAME_TOOL_ADVISORY', default: 2, help: 'Calls of one tool in a row that give an advisory.' },
    termination: { name: 'sameToolTermination', env: 'TOOLGATE_SAME_TOOL_TERMINATION', default: 3, help: 'Calls of one tool in a row that terminate the run.' }
  },
  terminated: TERMINATED,
  reads: 'results',
  initial: () => ({ tool: null, count: 0, advised: false }),
  step (state, call, th) {
    const same = call.tool === state.tool
    const count = same ? state.count + 1 : 1
    const { decision, advised } = decide(count, same && state.advised, th)
    return {
      state: { tool: call.tool, count, advised },
      hit: decision.action === 'none' ? null : { decision, message: (n) => `Loop detected (same_tool): "${call.tool}" ${n} times in a row.` }
    }
  }
}

const KINDS = [...LOOP_KIND_LIST, sameTool]

/** An object schema as JSON: its properties and which are required. */
interface JsonObject { properties: Record<string, unknown>, required?: string[] }

t.test("a kind's limits are run options, shown on the run, in the kinds' order after the others", async (t) => {
  const schemas = runSchemas(KINDS) as unknown as Record<'RunLimits' | 'CreateRunBody' | 'Run', JsonObject>
  const { RunLimits, CreateRunBody, Run } = schemas
  t.strictSame(Object.keys(RunLimits.properties).slice(-2), ['sameToolAdvisory', 'sameToolTermination'])
  t.match(RunLimits.properties.sameToolAdvisory, { type: 'integer', minimum: 0, maximum: 1_000_000 })
  t.notOk(RunLimits.required?.includes('sameToolAdvisory'), 'a run may leave it out')
  t.strictSame(Object.keys((CreateRunBody.properties.limits as JsonObject).properties), Object.keys(RunLimits.properties), 'POST /v1/runs takes them')
  const shown = Run.properties.limits as JsonObject
  t.strictSame(Object.keys(shown.properties).slice(-2), ['sameToolAdvisory', 'sameToolTermination'])
  t.ok(shown.required?.includes('sameToolTermination'), 'the run object always shows it')
  t.ok((Run.properties.terminationReason as { enum: string[] }).enum.includes('same_tool_streak'), 'its reason is a termination reason')
  t.strictSame(Object.keys(runSchemas(LOOP_KIND_LIST).RunLimits.properties).filter((k) => k.startsWith('sameTool')), [], 'the registered list has none of it')
})

t.test("a kind's limits are server settings read from its variables, with its defaults and bounds", async (t) => {
  const settings = settingsWith(KINDS)
  t.match(settings.sameToolAdvisory, { env: 'TOOLGATE_SAME_TOOL_ADVISORY', default: 2, spec: { kind: 'int', min: 0, max: 1_000_000 } })
  t.match(loadConfig({}, {}, settings), { sameToolAdvisory: 2, sameToolTermination: 3 })
  t.match(loadConfig({ TOOLGATE_SAME_TOOL_TERMINATION: '7' }, {}, settings), { sameToolAdvisory: 2, sameToolTermination: 7 })
  t.throws(() => loadConfig({ TOOLGATE_SAME_TOOL_ADVISORY: '-1' }, {}, settings), ConfigError)
  t.throws(() => loadConfig({ TOOLGATE_SAME_TOOL_ADVISORY: '-1' }, {}, settings), /TOOLGATE_SAME_TOOL_ADVISORY must be an integer from 0 to 1000000/)
})

t.test("a run's limits take the kind's defaults, the server's and its own", async (t) => {
  const defaults = defaultLoopLimits(KINDS)
  t.match(defaults, { sameToolAdvisory: 2, sameToolTermination: 3 })
  t.match(resolveRunOptions({}, 8, defaults).limits, { sameToolAdvisory: 2, sameToolTermination: 3, cycleTerminationRepetitions: 6 })
  t.match(resolveRunOptions({ limits: { sameToolTermination: 5 } }, 8, { ...defaults, sameToolAdvisory: 4 }).limits, { sameToolAdvisory: 4, sameToolTermination: 5 })
  t.match(initialLoopState(KINDS), { sameTool: { tool: null, count: 0, advised: false }, resets: 0 })
})

t.test("a kind has its loop counts in the figures and the summaries, and its metric labels from the start", async (t) => {
  t.strictSame(loopKindNames(KINDS), ['exact', 'cycle', 'errors', 'no_progress', 'same_tool'])
  t.strictSame(emptyLoopCounts(KINDS).same_tool, { advisories: 0, terminations: 0 })
  t.ok('same_tool' in loopDetectionsSchema(KINDS).properties)
  const stats = addStats(emptyStats(), { ...emptyStats(), loops: { same_tool: { advisories: 1, terminations: 1 } } })
  t.strictSame(summarize(stats, 1).loopDetections.same_tool, { advisories: 1, terminations: 1 })
  const metrics = new Metrics({ countRuns: async () => ({ active: 0, total: 0 }) as never, ready: async () => true }, () => [], KINDS)
  const samples = parse(await metrics.registry.metrics())
  const has = (name: string, labels: Record<string, string>): boolean => samples.some((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  t.ok(has('toolgate_loop_detections_total', { kind: 'same_tool', action: 'advisory' }), 'its advisories at 0')
  t.ok(has('toolgate_loop_detections_total', { kind: 'same_tool', action: 'terminated' }), 'its terminations at 0')
  t.ok(has('toolgate_run_terminations_total', { reason: 'same_tool_streak' }), 'runs it terminates at 0')
})

t.test('a run the kind terminates answers with its reason and its text; its advisory reaches the model', async (t) => {
  const ex = await startExecutor(t)
  const { app } = await buildTestApp(t, { tools: [tool('poke', ex.url)], withoutGuards: ['loops'], moreGuards: [loopsGuardOf(KINDS)] })
  await post(app, '/v1/runs', { runId: 'same', toolExecution: 'sequential' })
  const res = await post(app, '/v1/runs/same/batches', {
    calls: [1, 2, 3, 4].map((x) => ({ id: `c${x}`, name: 'poke', arguments: { x } }))
  })
  t.equal(res.status, 200)
  t.strictSame(res.body.results.map((r: { status: string }) => r.status), ['ok', 'ok', 'ok', 'terminated'])
  const stopped = res.body.results[3]
  t.equal(stopped.details.reason, 'same_tool_streak')
  t.match(stopped.content, TERMINATED, 'the call not run reads the kind\'s text')
  t.equal(ex.calls.length, 3, 'no call started after the termination')
  t.equal(res.body.run.state, 'terminated')
  t.equal(res.body.run.terminationReason, 'same_tool_streak')
  t.match(JSON.stringify(res.body), /Loop detected \(same_tool\): \\"poke\\" 2 times in a row/, 'its advisory is among the policy messages')
  const m = await scrape(app)
  t.equal(m.value('toolgate_loop_detections_total', { kind: 'same_tool', action: 'advisory' }), 1)
  t.equal(m.value('toolgate_loop_detections_total', { kind: 'same_tool', action: 'terminated' }), 1)
  t.equal(m.value('toolgate_run_terminations_total', { reason: 'same_tool_streak' }), 1)
})
