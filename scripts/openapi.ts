/**
 * Writes openapi.yaml from the route schemas: `npm run openapi`.
 * test/openapi.test.ts fails when the checked-in file differs.
 */
import { writeFile } from 'node:fs/promises'
import { buildApp } from '../src/app.js'
import { defaultConfig } from '../src/config.js'
import { renderOpenApi } from '../src/http/openapi.js'

const app = await buildApp(defaultConfig({ logLevel: 'silent' }))
const yaml = await renderOpenApi(app)
await app.close()
const target = new URL('../../openapi.yaml', import.meta.url)
await writeFile(target, yaml)
console.log(`wrote ${target.pathname}`)
