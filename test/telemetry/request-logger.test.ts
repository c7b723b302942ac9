import t from 'tap'
import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions } from 'pino'
import { Writable } from 'node:stream'
import { createLogger } from '../../src/logger.js'
import { RequestLogger } from '../../src/http/request-logger.js'

/** A root logger writing to memory, seen through a parent that counts the children made of it. */
function capture (): { parent: FastifyBaseLogger, lines: () => Array<Record<string, unknown>>, children: () => number } {
  const out: string[] = []
  const logger = createLogger('info', new Writable({ write (chunk: Buffer, _enc, cb) { out.push(chunk.toString()); cb() } }) as never)
  let children = 0
  const parent = {
    get level () { return logger.level },
    child: (bindings: Bindings, options?: ChildLoggerOptions) => { children++; return logger.child(bindings, options) }
  } as unknown as FastifyBaseLogger
  return { parent, lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>), children: () => children }
}

t.test('a request logger makes its pino child only when something logs, and only once', async (t) => {
  const { parent, lines, children } = capture()
  const log = new RequestLogger(parent, { reqId: 'req-7' }, {})
  t.equal(log.level, 'info', "the level is the parent's until a child exists")
  t.equal(children(), 0)
  log.debug('below the level')
  t.equal(children(), 1, 'a call makes the child, even one below the level')
  t.equal(lines().length, 0)
  log.info({ code: 'x' }, 'one')
  log.warn('two %s', 'args')
  t.equal(children(), 1, 'the child is made once')
  t.match(lines(), [{ level: 30, reqId: 'req-7', code: 'x', msg: 'one' }, { level: 40, reqId: 'req-7', msg: 'two args' }])
})

t.test('a request logger honours the options it was made with, and its children and level changes', async (t) => {
  const { parent, lines, children } = capture()
  const quiet = new RequestLogger(parent, { reqId: 'req-1' }, { level: 'warn' })
  t.equal(quiet.level, 'warn', 'a level given for the route shows before any child exists')
  t.equal(children(), 0)
  quiet.info('filtered by the route level')
  t.equal(lines().length, 0)
  quiet.child({ part: 'sub' }).error('from a grandchild')
  t.match(lines(), [{ level: 50, reqId: 'req-1', part: 'sub', msg: 'from a grandchild' }])
  quiet.level = 'error'
  t.equal(quiet.level, 'error')
  quiet.warn('now below the level')
  quiet.silent()
  t.equal(lines().length, 1)
})
