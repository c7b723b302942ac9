/**
 * The cost model sits in the one compile every definition goes through: an
 * MCP server's tool over a limit is not imported, the server's `lastError`
 * names the limit and the pointer, and its other tools are imported.
 */
import t from 'tap'
import { buildTestApp, get, runBatch } from '../helper.js'
import { listedTool, startScriptedServer } from '../mcp/scripted-server.js'
import { branchingRefs, manyProperties } from './costly-schemas.js'

t.test("an MCP server's costly schemas are not imported, with the reason in lastError; its other tools are", async (t) => {
  const server = await startScriptedServer([
    listedTool('nested', { inputSchema: { type: 'object', ...branchingRefs(22) } }),
    listedTool('wide', { inputSchema: manyProperties(1600) }),
    listedTool('fine')
  ])
  t.teardown(() => server.close())
  const { app } = await buildTestApp(t)
  await app.services.mcp.startAll([{ name: 's', transport: 'streamableHttp', url: server.url }])
  const view = (await get(app, '/v1/mcp-servers/s')).body
  t.same(view.tools, ['s_fine'])
  t.match(view.lastError, /nested: \/inputSchema\/\$defs\/a\d+.*nests subschemas 33 deep through \$ref, over the limit of 32/)
  t.match(view.lastError, /wide: \/inputSchema\/properties: the schema names more than 1000 properties, the limit/)

  const batch = await runBatch(app, [{ id: 'w', name: 's_wide', arguments: { p1: 'x' } }, { id: 'f', name: 's_fine', arguments: { text: 'hi' } }])
  t.equal(batch.status, 200)
  t.same(batch.body.results.map((r: { status: string }) => r.status), ['rejected', 'ok'], 'the tool beside the refused one runs')
})
