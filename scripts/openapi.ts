/**
 * Writes openapi.yaml from the route schemas: `npm run openapi`, and the
 * example client's types from it (examples/openapi-client/api.ts).
 * test/openapi.test.ts and test/examples/openapi-client.test.ts fail when
 * the checked-in files differ.
 */
import { writeFile } from 'node:fs/promises'
import { buildApp } from '../src/app.js'
import { defaultConfig } from '../src/config.js'
import { renderOpenApi } from '../src/http/openapi.js'
import { parse } from 'yaml'
import { generateClientTypes } from '../examples/openapi-client/generate.js'

const app = await buildApp(defaultConfig({ logLevel: 'silent' }))
const yaml = await renderOpenApi(app)
await app.close()
const target = new URL('../../openapi.yaml', import.meta.url)
await writeFile(target, yaml)
console.log(`wrote ${target.pathname}`)
const client = new URL('../../examples/openapi-client/api.ts', import.meta.url)
await writeFile(client, generateClientTypes(parse(yaml)))
console.log(`wrote ${client.pathname}`)
