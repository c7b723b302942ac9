/** Run by logger.test.ts in a process of its own: three lines on stdout, then process.exit at once. */
import { createLogger } from '../../src/logger.js'

const log = createLogger('info')
for (let i = 0; i < 3; i++) log.info({ i }, 'line')
process.exit(0)
