// The operator's page: runs, a run's batches, a batch's timeline, and the approvals inbox.
import { ApiError, api, enc, session } from './api.js'
import { badge, h, time } from './dom.js'
import { STATUSES, render } from './timeline.js'
import { inbox } from './approvals.js'
import { uncertainPanel } from './uncertain.js'
import { serversView } from './servers.js'

/** The states a run can be in, for the runs list's filter. */
const RUN_STATES = ['active', 'terminated', 'cancelled', 'ended']

/** How often a batch that is not finished is asked again while it is shown. */
const LIVE_MS = 2000
let liveTimer = null

const view = document.getElementById('view')
const signIn = document.getElementById('sign-in')
const nav = document.getElementById('nav')

signIn.addEventListener('submit', async (event) => {
  event.preventDefault()
  const input = document.getElementById('key')
  session.key = input.value.trim()
  input.value = ''
  try {
    let target = null
    try {
      await api('/v1/runs?limit=1')
    } catch (err) {
      // An approver may not read runs, only the inbox; an admin only the tool servers.
      if (!(err instanceof ApiError && err.status === 403)) throw err
      target = await firstAllowed([['/v1/approvals', '#/approvals'], ['/v1/summary', '#/summary'], ['/v1/mcp-servers', '#/servers']])
    }
    document.getElementById('sign-in-error').textContent = ''
    // A new hash renders through hashchange; rendering here as well would draw the view twice.
    if (target !== null && location.hash !== target) location.hash = target
    else show()
  } catch (err) {
    session.key = null
    document.getElementById('sign-in-error').textContent = err instanceof ApiError && err.status === 401
      ? 'That key is not valid.'
      : err instanceof ApiError && err.status === 403 ? 'That key lacks the orchestrator, approver, operator and admin roles.' : `Sign-in failed: ${err.message}`
  }
})

/** The first view whose route this key may read; throws the last refusal. */
async function firstAllowed (choices) {
  let refusal
  for (const [path, target] of choices) {
    try {
      await api(path)
      return target
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 403)) throw err
      refusal = err
    }
  }
  throw refusal
}

document.getElementById('sign-out').addEventListener('click', () => {
  session.key = null
  location.hash = '#/'
  show()
})

window.addEventListener('hashchange', show)
show()

async function show () {
  const signedIn = session.key !== null
  signIn.hidden = signedIn
  nav.hidden = !signedIn
  window.clearTimeout(liveTimer)
  liveTimer = null
  view.replaceChildren()
  if (!signedIn) return
  const [path, search = ''] = (location.hash.replace(/^#/, '') || '/').split('?')
  const query = new window.URLSearchParams(search)
  const parts = path.split('/').filter(Boolean).map(decodePart)
  view.setAttribute('aria-busy', 'true')
  try {
    // A malformed % escape (a hand-edited or cut link) names no page; it must not blank this one.
    if (parts.includes(null)) view.append(h('p', { class: 'error', role: 'alert' }, 'No such page.'))
    else if (parts.length === 0) await runsView(query.get('state'))
    else if (parts[0] === 'approvals') await inbox(view)
    else if (parts[0] === 'summary') await summaryView()
    else if (parts[0] === 'servers' && parts.length === 1) await serversView(view, show)
    else if (parts[0] === 'runs' && parts[2] === 'uncertain' && parts.length === 3) view.append(await uncertainPanel(parts[1], show))
    else if (parts[0] === 'runs' && parts.length === 2) await runView(parts[1])
    else if (parts[0] === 'runs' && parts[2] === 'batches' && parts.length === 4) await batchView(parts[1], parts[3])
    else view.append(h('p', { class: 'error' }, 'No such page.'))
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      session.key = null
      return show()
    }
    view.append(h('p', { class: 'error', role: 'alert', 'data-code': err.code ?? '' }, err.message))
  } finally {
    view.removeAttribute('aria-busy')
  }
}

/** A part of the location hash, decoded, or null when its % escapes are malformed. */
function decodePart (part) {
  try {
    return decodeURIComponent(part)
  } catch {
    return null
  }
}

async function runsView (state) {
  const filter = RUN_STATES.includes(state) ? state : null
  const select = h('select', { id: 'state-filter' }, h('option', { value: '' }, 'every state'), RUN_STATES.map((s) => h('option', { value: s, selected: s === filter }, s)))
  select.onchange = () => { location.hash = select.value === '' ? '#/' : `#/?state=${enc(select.value)}` }
  const body = h('tbody')
  const table = h('table', { class: 'runs' },
    h('caption', {}, filter === null ? 'The tenant\'s runs, most recently active first' : `The tenant's ${filter} runs, most recently active first`),
    h('thead', {}, h('tr', {}, ['run', 'state', 'turns', 'tool calls', 'tokens', 'last activity', 'created', 'expires'].map((c) => h('th', { scope: 'col' }, c)))),
    body)
  view.append(h('h1', {}, 'Runs'), h('div', { class: 'filters' }, h('label', { for: 'state-filter' }, 'State '), select), table)
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'More runs')
  view.append(more)
  const load = async (after) => {
    const { data } = await api(`/v1/runs?limit=50${filter === null ? '' : `&state=${enc(filter)}`}${after ? `&cursor=${enc(after)}` : ''}`)
    for (const run of data.runs) {
      body.append(h('tr', { 'data-run': run.runId, 'data-state': run.state },
        h('td', {}, h('a', { href: `#/runs/${enc(run.runId)}` }, run.runId)),
        h('td', {}, badge(run.state, run.terminationReason ? `${run.state}: ${run.terminationReason}` : run.state)),
        h('td', { class: 'num' }, run.counters.turns),
        h('td', { class: 'num' }, run.counters.toolCalls),
        h('td', { class: 'num' }, run.counters.totalTokens),
        h('td', { class: 'last-active' }, run.lastActiveAt ? h('time', { datetime: run.lastActiveAt, title: time(run.lastActiveAt) }, ago(run.lastActiveAt)) : ''),
        h('td', {}, time(run.createdAt)),
        h('td', {}, time(run.expiresAt))))
    }
    if (body.children.length === 0 && data.next === null) body.append(h('tr', {}, h('td', { colspan: 8, class: 'empty' }, filter === null ? 'No runs yet.' : `No ${filter} runs.`)))
    more.hidden = data.next === null
    more.onclick = () => load(data.next).catch((err) => view.append(h('p', { class: 'error' }, err.message)))
  }
  await load()
}

/** How long ago, in words a person reads at a glance. */
function ago (iso) {
  const ms = Date.now() - Date.parse(iso)
  if (!(ms >= 0)) return time(iso)
  if (ms < 60_000) return `${Math.max(0, Math.round(ms / 1000))} s ago`
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min ago`
  if (ms < 86_400_000) return `${Math.round(ms / 3_600_000)} h ago`
  return time(iso)
}

async function runView (runId) {
  const [{ data: run }, { data: list }] = await Promise.all([
    api(`/v1/runs/${enc(runId)}`),
    api(`/v1/runs/${enc(runId)}/batches`)
  ])
  view.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Runs'), ' / ', runId),
    h('h1', {}, `Run ${run.runId} `, badge(run.state, run.terminationReason ? `${run.state}: ${run.terminationReason}` : run.state)),
    h('dl', { class: 'facts' },
      fact('mode', run.toolExecution), fact('max concurrent', run.maxConcurrentTools),
      fact('turns', run.counters.turns), fact('tool calls', run.counters.toolCalls), fact('tokens', run.counters.totalTokens),
      fact('created', time(run.createdAt)), fact('expires', time(run.expiresAt))),
    h('h2', {}, 'Batches'))
  const rows = list.batches.map((b) => h('tr', { 'data-batch': b.batchId },
    h('td', { class: 'num' }, b.turn ?? ''),
    h('td', {}, h('a', { href: `#/runs/${enc(run.runId)}/batches/${enc(b.batchId)}` }, b.batchId)),
    h('td', {}, badge(b.state)),
    h('td', { class: 'num' }, b.calls ?? ''),
    h('td', {}, Object.entries(b.statuses ?? {}).map(([s, n]) => badge(s, `${s} ${n}`))),
    h('td', {}, time(b.completedAt))))
  if (rows.length === 0) rows.push(h('tr', {}, h('td', { colspan: 6, class: 'empty' }, 'No batches yet.')))
  view.append(h('table', { class: 'batches' },
    h('thead', {}, h('tr', {}, ['turn', 'batch', 'state', 'calls', 'by status', 'completed'].map((c) => h('th', {}, c)))),
    h('tbody', {}, rows)))
  view.append(await uncertainPanel(run.runId, show))
}

async function summaryView () {
  const { data } = await api('/v1/summary')
  view.append(h('h1', {}, 'Summary'), h('p', { class: 'muted' }, 'Every run since the service started. A run\'s uncertain writes: #/runs/<run>/uncertain.'))
  const rows = Object.entries(data ?? {}).filter(([, v]) => typeof v !== 'object' || v === null)
  view.append(h('table', { class: 'summary' }, h('tbody', {}, rows.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', { class: 'num' }, String(v)))))))
}

async function batchView (runId, batchId) {
  const { data: answer } = await api(`/v1/runs/${enc(runId)}/batches/${enc(batchId)}`)
  view.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Runs'), ' / ', h('a', { href: `#/runs/${enc(runId)}` }, runId), ' / ', batchId),
    h('h1', {}, `Batch ${batchId}`, answer.turn ? ` (turn ${answer.turn})` : ''))
  if (!Array.isArray(answer.results) || answer.state === 'awaiting_approval' || answer.state === 'running') {
    view.append(h('p', { class: 'pending', 'data-state': answer.state ?? '' }, `This batch is ${answer.state ?? 'not finished'}; this page updates by itself when it completes. `,
      answer.state === 'awaiting_approval' ? h('a', { href: '#/approvals' }, 'Open the approvals inbox.') : ''))
    if (answer.state === 'awaiting_approval') view.append(heldTable(answer))
    // Live: asked again until it completes, as long as this batch is what the page shows.
    const shown = location.hash
    liveTimer = window.setTimeout(() => { if (location.hash === shown) show() }, LIVE_MS)
    return
  }
  const runState = answer.run?.terminationReason ? `${answer.run.state}: ${answer.run.terminationReason}` : answer.run?.state
  view.append(h('p', {}, 'Run after the batch: ', badge(answer.run?.state ?? 'unknown', runState ?? 'unknown'), answer.continue === false ? ' · the orchestrator must not continue' : ''))
  for (const m of answer.policyMessages ?? []) view.append(h('p', { class: 'policy' }, '↻ policy message to the model: ', m.content))
  view.append(h('div', { class: 'legend' }, STATUSES.map((s) => badge(s)), h('span', { class: 'legend-arrow' }, '→ blocked by')))
  const wrap = h('div', { class: 'timeline-wrap' })
  view.append(wrap)
  // As wide as the page allows: no scrolling at 800 px, the text at its real size.
  wrap.append(render(answer, { width: wrap.clientWidth - 2 }))
  const here = new Set(answer.results.map((r) => r.callId))
  // A write of an earlier turn that blocked a call here: its batch, from the run's unresolved uncertain writes.
  const elsewhere = answer.results.some((r) => r.details?.blockedBy && !here.has(r.details.blockedBy))
  const earlier = new Map()
  if (elsewhere) {
    const { data } = await api(`/v1/runs/${enc(runId)}/uncertain`).catch(() => ({ data: null }))
    for (const w of data?.uncertain ?? []) earlier.set(w.operationId, w)
  }
  const waitedSince = new Map((answer.events ?? []).filter((e) => e.type === 'call.awaiting_approval').map((e) => [e.callId, e.at]))
  const epochs = answer.results.map((r) => r.details?.epoch).filter((e) => typeof e === 'number')
  const firstEpoch = epochs.length === 0 ? 0 : Math.min(...epochs)
  view.append(h('table', { class: 'calls' },
    h('thead', {}, h('tr', {}, ['#', 'call', 'tool', 'status', 'epoch', 'started', 'duration', 'conflict key', 'waited for', 'why', 'decision'].map((c) => h('th', {}, c)))),
    h('tbody', {}, answer.results.map((r, i) => {
      const d = r.details ?? {}
      const why = [d.reason, d.cause, d.httpStatus ? `HTTP ${d.httpStatus}` : null].filter(Boolean).join(', ')
      return h('tr', { 'data-call': r.callId },
        h('td', { class: 'num' }, i + 1), h('td', {}, r.callId), h('td', {}, r.name), h('td', {}, badge(r.status)),
        h('td', { class: 'num' }, d.epoch ?? ''), h('td', {}, d.startedAt ? clock(d.startedAt) : ''),
        h('td', { class: 'num' }, typeof d.durationMs === 'number' ? `${d.durationMs} ms` : ''),
        h('td', { class: 'key' }, d.conflictKey ? h('code', {}, d.conflictKey) : ''),
        h('td', { class: 'waited' }, waitedFor(runId, r, firstEpoch, here, earlier)),
        h('td', {}, why),
        h('td', { class: 'decision' }, decision(d.approval, waitedSince.get(r.callId))))
    }))))
}

/**
 * Why a call did not start at once, from its result's details: a person's
 * decision, the epoch before its own (epochs run one after another), the call
 * holding its conflict key, every slot taken, or (never ran) an uncertain
 * write it was blocked by.
 */
function waitedFor (runId, r, firstEpoch, here, earlier) {
  const d = r.details ?? {}
  const out = []
  const add = (...parts) => out.push(h('span', { class: 'wait' }, ...parts))
  if (d.approval !== undefined) add('a decision (approval)')
  if (typeof d.epoch === 'number' && d.epoch > firstEpoch) add(`epoch ${d.epoch - 1} to settle`)
  if (d.waited?.for === 'conflict_key') add('key held by ', rowLink(d.waited.callId, here))
  else if (d.waited?.for === 'slot') add('a free slot (maxConcurrentTools)')
  else if (d.waited !== undefined) add(String(d.waited.for))
  if (d.reason === 'conflict_key_busy') add('key held by another run')
  if (d.blockedBy) add('never ran: ', blockedByLink(runId, d, here, earlier))
  return out
}

/** A link to the row of a call of this batch. */
function rowLink (callId, here) {
  if (!here.has(callId)) return callId
  return h('a', { class: 'row-link', href: `#${location.hash.replace(/^#/, '')}`, onclick: (e) => { e.preventDefault(); view.querySelector(`tr[data-call="${window.CSS.escape(callId)}"]`)?.scrollIntoView() } }, callId)
}

/** The calls a waiting batch holds for a decision. */
function heldTable (answer) {
  return h('table', { class: 'held' },
    h('thead', {}, h('tr', {}, ['held call', 'tool', 'requested', 'expires'].map((c) => h('th', {}, c)))),
    h('tbody', {}, (answer.approvals ?? []).map((a) => h('tr', { 'data-call': a.callId },
      h('td', {}, a.callId), h('td', {}, a.tool), h('td', {}, time(a.requestedAt)), h('td', {}, time(a.expiresAt))))))
}

/** "blocked by c1", linked to the blocker's row here or to the earlier batch that sent it. */
function blockedByLink (runId, d, here, earlier) {
  if (here.has(d.blockedBy)) return ['blocked by ', rowLink(d.blockedBy, here), ' (uncertain write)']
  const w = earlier.get(d.blockedByOperation)
  if (w === undefined) return `blocked by ${d.blockedBy} (an earlier turn)`
  return h('a', { class: 'blocked-by', href: `#/runs/${enc(runId)}/batches/${enc(w.batchId)}` }, `blocked by ${d.blockedBy} (batch ${w.batchId})`)
}

/** Who decided, when, what, why, whether edited, and how long the call waited. */
function decision (approval, since) {
  if (approval === undefined) return ''
  const who = approval.by?.name ?? approval.by?.tenant ?? (typeof approval.by === 'string' ? approval.by : '')
  const waited = since && approval.at ? ` after ${duration(Date.parse(approval.at) - Date.parse(since))}` : ''
  return [badge(approval.decision === 'approved' ? 'ok' : 'denied', approval.decision),
    `${who ? `by ${who} ` : ''}${approval.at ? `at ${clock(approval.at)}` : ''}${waited}`,
    approval.edited ? h('span', { class: 'edited' }, ' · edited') : '',
    // What the person changed: the arguments as held, then as approved.
    approval.arguments ? h('span', { class: 'edit' }, `: ${JSON.stringify(approval.arguments.original)} → ${JSON.stringify(approval.arguments.edited)}`) : '',
    approval.reason ? h('span', { class: 'reason' }, ` · “${approval.reason}”`) : '']
}

/** A time of day with milliseconds: calls of one batch start within the same second. */
function clock (iso) {
  const d = new Date(iso)
  return `${d.toLocaleTimeString([], { hour12: false })}.${String(d.getMilliseconds()).padStart(3, '0')}`
}

function duration (ms) {
  if (!(ms >= 0)) return ''
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`
  return `${Math.round(ms / 60_000)} min`
}

function fact (name, value) {
  return [h('dt', {}, name), h('dd', {}, value)]
}
