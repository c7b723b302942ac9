/**
 * Writes schemas/tools-file.schema.json from the TypeBox schemas:
 * `npm run tools-schema`. test/tools/file-schema.test.ts fails when the
 * checked-in file differs.
 */
import { writeFile } from 'node:fs/promises'
import { TOOLS_FILE_SCHEMA_PATH, renderToolsFileSchema } from '../src/tools/file-schema.js'

const target = new URL(`../../${TOOLS_FILE_SCHEMA_PATH}`, import.meta.url)
await writeFile(target, renderToolsFileSchema())
console.log(`wrote ${target.pathname}`)
