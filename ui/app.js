// The operator's page: runs, a run's batches, a batch's timeline, and the approvals inbox.
import { ApiError, api, enc, session } from './api.js'
import { badge, h, time } from './dom.js'
import { STATUSES, render } from './timeline.js'
import { inbox } from './approvals.js'

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
      // An approver may not read runs, only the inbox: that key signs in to the inbox.
      if (!(err instanceof ApiError && err.status === 403)) throw err
      await api('/v1/approvals')
      target = '#/approvals'
    }
    document.getElementById('sign-in-error').textContent = ''
    // A new hash renders through hashchange; rendering here as well would draw the view twice.
    if (target !== null && location.hash !== target) location.hash = target
    else show()
  } catch (err) {
    session.key = null
    document.getElementById('sign-in-error').textContent = err instanceof ApiError && err.status === 401
      ? 'That key is not valid.'
      : err instanceof ApiError && err.status === 403 ? 'That key lacks the orchestrator and approver roles.' : `Sign-in failed: ${err.message}`
  }
})

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
  view.replaceChildren()
  if (!signedIn) return
  const path = location.hash.replace(/^#/, '') || '/'
  const parts = path.split('/').filter(Boolean).map(decodePart)
  view.setAttribute('aria-busy', 'true')
  try {
    // A malformed % escape (a hand-edited or cut link) names no page; it must not blank this one.
    if (parts.includes(null)) view.append(h('p', { class: 'error', role: 'alert' }, 'No such page.'))
    else if (parts.length === 0) await runsView()
    else if (parts[0] === 'approvals') await inbox(view)
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

async function runsView (cursor) {
  const body = h('tbody')
  const table = h('table', { class: 'runs' },
    h('thead', {}, h('tr', {}, ['run', 'state', 'turns', 'tool calls', 'tokens', 'created', 'expires'].map((c) => h('th', {}, c)))),
    body)
  view.append(h('h1', {}, 'Runs'), table)
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'More runs')
  view.append(more)
  const load = async (after) => {
    const { data } = await api(`/v1/runs?limit=50${after ? `&cursor=${enc(after)}` : ''}`)
    for (const run of data.runs) {
      body.append(h('tr', { 'data-run': run.runId },
        h('td', {}, h('a', { href: `#/runs/${enc(run.runId)}` }, run.runId)),
        h('td', {}, badge(run.state, run.terminationReason ? `${run.state}: ${run.terminationReason}` : run.state)),
        h('td', { class: 'num' }, run.counters.turns),
        h('td', { class: 'num' }, run.counters.toolCalls),
        h('td', { class: 'num' }, run.counters.totalTokens),
        h('td', {}, time(run.createdAt)),
        h('td', {}, time(run.expiresAt))))
    }
    if (body.children.length === 0) body.append(h('tr', {}, h('td', { colspan: 7, class: 'empty' }, 'No runs yet.')))
    more.hidden = data.next === null
    more.onclick = () => load(data.next).catch((err) => view.append(h('p', { class: 'error' }, err.message)))
  }
  await load(cursor)
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
}

async function batchView (runId, batchId) {
  const { data: answer } = await api(`/v1/runs/${enc(runId)}/batches/${enc(batchId)}`)
  view.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Runs'), ' / ', h('a', { href: `#/runs/${enc(runId)}` }, runId), ' / ', batchId),
    h('h1', {}, `Batch ${batchId}`, answer.turn ? ` (turn ${answer.turn})` : ''))
  if (!Array.isArray(answer.results) || answer.state === 'awaiting_approval' || answer.state === 'running') {
    view.append(h('p', { class: 'pending' }, `This batch is ${answer.state ?? 'not finished'}. `,
      answer.state === 'awaiting_approval' ? h('a', { href: '#/approvals' }, 'Open the approvals inbox.') : '',
      ' ', h('button', { type: 'button', onclick: show }, 'Refresh')))
    return
  }
  const runState = answer.run?.terminationReason ? `${answer.run.state}: ${answer.run.terminationReason}` : answer.run?.state
  view.append(h('p', {}, 'Run after the batch: ', badge(answer.run?.state ?? 'unknown', runState ?? 'unknown'), answer.continue === false ? ' · the orchestrator must not continue' : ''))
  for (const m of answer.policyMessages ?? []) view.append(h('p', { class: 'policy' }, '↻ policy message to the model: ', m.content))
  view.append(h('div', { class: 'legend' }, STATUSES.map((s) => badge(s)), h('span', { class: 'legend-arrow' }, '→ blocked by')))
  view.append(h('div', { class: 'timeline-wrap' }, render(answer)))
  view.append(h('table', { class: 'calls' },
    h('thead', {}, h('tr', {}, ['#', 'call', 'tool', 'status', 'epoch', 'started', 'duration', 'why'].map((c) => h('th', {}, c)))),
    h('tbody', {}, answer.results.map((r, i) => {
      const d = r.details ?? {}
      const why = [d.reason, d.cause, d.httpStatus ? `HTTP ${d.httpStatus}` : null, d.blockedBy ? `blocked by ${d.blockedBy}` : null].filter(Boolean).join(', ')
      return h('tr', { 'data-call': r.callId },
        h('td', { class: 'num' }, i + 1), h('td', {}, r.callId), h('td', {}, r.name), h('td', {}, badge(r.status)),
        h('td', { class: 'num' }, d.epoch ?? ''), h('td', {}, d.startedAt ? new Date(d.startedAt).toLocaleTimeString() : ''),
        h('td', { class: 'num' }, typeof d.durationMs === 'number' ? `${d.durationMs} ms` : ''), h('td', {}, why))
    }))))
}

function fact (name, value) {
  return [h('dt', {}, name), h('dd', {}, value)]
}
