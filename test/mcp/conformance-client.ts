/**
 * The client command the official MCP conformance suite runs in its
 * `client` mode (conformance-client.test.ts): `<node> conformance-client.ts
 * <server-url>`, with the scenario in MCP_CONFORMANCE_SCENARIO and its
 * credentials in MCP_CONFORMANCE_CONTEXT. It starts toolgate's app in this
 * process with the scenario's server as an MCP server (OAuth settings from
 * the context), imports its tools, and calls each one through the batch
 * route, as an orchestrator would. A server's question (`elicitation/create`)
 * is answered as a person would, through the approval route: accepted with
 * every field left out, so the schema's defaults are what the server gets.
 * Exits 0 when the server is ready and every call is `ok`.
 */
import { buildApp } from '../../src/app.js'
import { KeyRing } from '../../src/auth/keys.js'
import { defaultConfig } from '../../src/config.js'
import { createLogger } from '../../src/logger.js'

const url = process.argv.at(-1)!
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? ''
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as Record<string, string | undefined>
/** Arguments of the scenarios' tools that take some. */
const ARGUMENTS: Record<string, Record<string, unknown>> = { add_numbers: { a: 5, b: 3 } }

function oauthOf (ctx: Record<string, string | undefined>): Record<string, unknown> | undefined {
  if (ctx.client_id === undefined) return undefined
  if (ctx.private_key_pem !== undefined) return { clientId: ctx.client_id, privateKeyJwt: { privateKey: ctx.private_key_pem, alg: ctx.signing_algorithm ?? 'ES256' } }
  return { clientId: ctx.client_id, clientSecret: ctx.client_secret }
}

const config = defaultConfig({ logLevel: 'warn' })
const app = await buildApp(config, { keys: new KeyRing(), logger: createLogger(config.logLevel, process.stderr), approvalSweepMs: 0 })
await app.ready()
let failed = false
try {
  const oauth = oauthOf(context)
  await app.services.mcp.startAll([{ name: 'conformance', transport: 'streamableHttp', url, prefix: '', trust: 'trusted', timeoutMs: 20_000, ...(oauth === undefined ? {} : { oauth }) }])
  const view = app.services.mcp.view('conformance')!
  console.log(`${scenario}: server ${view.state}${view.lastError === null ? '' : ` (${view.lastError})`}, tools ${JSON.stringify(view.tools)}`)
  if (view.state !== 'ready') failed = true
  for (const name of view.state === 'ready' ? view.tools : []) {
    const run = await app.inject({ method: 'POST', url: '/v1/runs', payload: {} })
    const runId = (run.json() as { runId: string }).runId
    const batch = app.inject({ method: 'POST', url: `/v1/runs/${runId}/batches`, payload: { calls: [{ id: 'c1', name, arguments: ARGUMENTS[name] ?? {} }] } })
    let done = false
    void batch.finally(() => { done = true })
    // A question of the server waits in the approvals inbox until this answers it.
    while (!done) {
      const inbox = (await app.inject({ method: 'GET', url: '/v1/approvals' })).json() as { approvals?: Array<{ runId: string, batchId: string, callId: string, elicitation?: unknown }> }
      const question = inbox.approvals?.find((a) => a.runId === runId && a.elicitation !== undefined)
      if (question !== undefined) {
        const decided = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/batches/${question.batchId}/approvals`, payload: { decisions: [{ callId: question.callId, approve: true, content: {} }] } })
        console.log(`${name}: question answered, HTTP ${decided.statusCode}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const result = ((await batch).json() as { results?: Array<{ status: string, content: unknown }> }).results?.[0]
    console.log(`${name}: ${JSON.stringify(result)}`)
    if (result?.status !== 'ok') failed = true
  }
} catch (err) {
  console.error(err)
  failed = true
} finally {
  await app.close()
}
process.exit(failed ? 1 : 0)
