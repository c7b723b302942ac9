// MCP servers and their quarantined tools (SPEC section 18): what changed in
// each tool since an admin pinned it, in words and as a word diff of its
// description, and an approve button. Needs an admin key.
import { ApiError, api, enc } from './api.js'
import { badge, h, time } from './dom.js'
import { wordDiff } from './diff.js'

export async function serversView (view, onApproved) {
  view.append(h('h1', {}, 'Tool servers'))
  let servers
  try {
    servers = (await api('/v1/mcp-servers')).data.mcpServers
  } catch (err) {
    if (err instanceof ApiError && err.status === 403) {
      view.append(h('p', { class: 'error', role: 'alert', 'data-code': err.code }, 'Tool servers and their quarantine need a key with the admin role.'))
      return
    }
    throw err
  }
  if (servers.length === 0) {
    view.append(h('p', { class: 'empty' }, 'No MCP servers.'))
    return
  }
  const pins = await Promise.all(servers.map((s) => s.pinning === 'on' ? api(`/v1/mcp-servers/${enc(s.name)}/pins`).then((r) => r.data.tools) : Promise.resolve([])))
  view.append(h('table', { class: 'servers' },
    h('thead', {}, h('tr', {}, ['server', 'transport', 'state', 'pinning', 'tools offered', 'in quarantine', 'listed', 'last error'].map((c) => h('th', {}, c)))),
    h('tbody', {}, servers.map((s, i) => h('tr', { 'data-server': s.name },
      h('td', {}, s.name), h('td', {}, s.transport), h('td', {}, badge(s.state === 'ready' ? 'ok' : s.state === 'down' ? 'error' : 'running', s.state)),
      h('td', {}, s.pinning), h('td', { class: 'num' }, s.tools.length),
      h('td', { class: 'num' }, pins[i].filter((p) => p.state === 'quarantined').length),
      h('td', {}, time(s.refreshedAt)), h('td', { class: 'muted' }, s.lastError ?? ''))))))
  servers.forEach((s, i) => {
    const held = pins[i].filter((p) => p.state === 'quarantined')
    if (held.length > 0) view.append(quarantine(s.name, held, onApproved))
  })
  if (pins.every((p) => p.every((t) => t.state !== 'quarantined'))) view.append(h('p', { class: 'empty' }, 'No tool is in quarantine.'))
}

/** One server's quarantined tools, each with what changed and an approve button. */
function quarantine (server, tools, onApproved) {
  const outcome = h('p', { class: 'outcome', role: 'status' })
  const buttons = []
  const approve = async (names) => {
    for (const b of buttons) b.disabled = true
    try {
      await api(`/v1/mcp-servers/${enc(server)}/pins`, { method: 'POST', body: { approve: names } })
      outcome.textContent = `Approved: ${names.join(', ')}.`
      onApproved?.()
    } catch (err) {
      outcome.textContent = err instanceof ApiError ? `${err.code}: ${err.message}` : String(err)
      for (const b of buttons) b.disabled = false
    }
  }
  const section = h('section', { class: 'quarantine', 'data-server': server, 'aria-label': `quarantined tools of ${server}` },
    h('h2', {}, `${server}: ${tools.length} ${tools.length === 1 ? 'tool' : 'tools'} in quarantine`),
    h('p', { class: 'muted' }, 'Changed or new since its tools were pinned: not offered to models, and calls to them are rejected (tool_quarantined), until an admin approves the new definition.'))
  for (const t of tools) {
    const one = h('button', { type: 'button', class: 'approve approve-pin', 'aria-label': `Approve ${t.name}` }, 'Approve')
    one.onclick = () => approve([t.name])
    buttons.push(one)
    section.append(h('article', { class: 'quarantined', 'data-tool': t.name },
      h('h3', {}, `${t.name} `, h('span', { class: 'muted' }, `(the server's ${t.serverToolName})`), ' ', badge(t.pinned === null ? 'awaiting_approval' : 'rejected', t.pinned === null ? 'new' : 'changed')),
      descriptionDiff(t),
      h('ul', { class: 'changes' }, t.changes.map((c) => h('li', { class: /^annotation /.test(c) ? 'flip' : /keyword/.test(c) ? 'keyword' : '' }, c))),
      h('div', { class: 'actions' }, one)))
  }
  if (tools.length > 1) {
    const all = h('button', { type: 'button', class: 'approve approve-all' }, `Approve all ${tools.length}`)
    all.onclick = () => approve(tools.map((t) => t.name))
    buttons.push(all)
    section.append(h('div', { class: 'actions' }, all))
  }
  section.append(outcome)
  return section
}

/** The description as pinned and as listed now, words removed struck through and words added marked. */
function descriptionDiff (t) {
  const before = t.pinned?.description ?? ''
  const after = t.current?.description ?? ''
  if (t.pinned !== null && before === after) return ''
  const parts = t.pinned === null ? [{ op: 'added', text: after }] : wordDiff(before, after)
  return h('div', { class: 'description-diff' },
    h('span', { class: 'muted' }, 'Description: '),
    parts.map((p) => p.op === 'same' ? p.text : h(p.op === 'added' ? 'ins' : 'del', {}, p.text)))
}
