/**
 * The process: read configuration, load keys and tools, listen, and drain
 * on SIGTERM. Everything else is built by buildApp.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { dirname, resolve } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import { KeyRing, KeysFileError } from './auth/keys.js'
import { listenHost, openModeRefusal } from './auth/open-mode.js'
import { cliAction } from './cli.js'
import { ConfigError, type Config, loadConfig, unknownVariables } from './config.js'
import { createLogger } from './logger.js'
import { otelEnabled, startOtel } from './telemetry/otel.js'
import { traceLogFields } from './telemetry/tracing.js'
import { readToolsDocument, readToolsFile } from './tools/load.js'
import { InvalidMcpServerError } from './mcp/servers.js'
import { InvalidToolError } from './tools/registry.js'

const here = dirname(fileURLToPath(import.meta.url))
/** The bundled example tools (used when TOOLGATE_TOOLS_FILE is unset). */
export const EXAMPLE_TOOLS_FILE = resolve(here, '../../examples/tools.json')

/** The version of package.json beside the compiled tree (the image copies it too). */
function packageVersion (): string {
  try {
    return (JSON.parse(readFileSync(resolve(here, '../../package.json'), 'utf8')) as { version?: string }).version ?? 'unknown'
  } catch {
    return 'unknown'
  }
}

async function main (): Promise<void> {
  const action = cliAction(process.argv.slice(2), packageVersion())
  if (action.kind !== 'serve') {
    ;(action.exitCode === 0 ? process.stdout : process.stderr).write(action.text)
    process.exit(action.exitCode)
  }
  let config: Config
  try {
    config = loadConfig()
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(err.message + '\n')
      process.exit(2)
    }
    throw err
  }
  // With spans exported, every line written while a request's span is active names it (trace_id, span_id).
  const logger = createLogger(config.logLevel, undefined, tracingConfigured() ? { mixin: traceLogFields } : {})

  let keys: KeyRing
  let toolDefs: unknown[]
  let mcpServers: unknown[] = []
  let example: FastifyInstance | null = null
  let stopOtel = async (): Promise<void> => {}
  try {
    // Spans are exported over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise tracing costs nothing.
    stopOtel = await startOtel(process.env)
    keys = config.apiKeysFile === null ? new KeyRing() : await KeyRing.fromFile(config.apiKeysFile)
    if (config.toolsFile !== null) {
      ;({ tools: toolDefs, mcpServers } = await readToolsDocument(config.toolsFile))
    } else {
      // A newcomer's first minute: the example tools, with their executor beside us.
      const { buildExecutor } = await import('../examples/executor.js')
      example = buildExecutor()
      const address = await example.listen({ port: 0, host: '127.0.0.1' })
      toolDefs = (await readToolsFile(EXAMPLE_TOOLS_FILE)).map((def) => withOrigin(def, address))
      logger.info({ executor: address }, 'TOOLGATE_TOOLS_FILE is unset: serving the example tools with the example executor')
    }
  } catch (err) {
    const problems = err instanceof KeysFileError ? err.problems : [(err as Error).message]
    logger.fatal({ problems }, 'cannot start')
    process.stderr.write(`Cannot start: ${err instanceof KeysFileError ? err.message : (err as Error).message}\n`)
    process.exit(2)
  }
  const host = listenHost(config.host, keys.open)
  const refusal = openModeRefusal({ open: keys.open, realTools: config.toolsFile !== null, host, allowOpen: config.allowOpen })
  if (refusal !== null) {
    logger.fatal({ problems: [refusal] }, 'cannot start')
    process.stderr.write(`Cannot start: ${refusal}\n`)
    process.exit(2)
  }
  for (const warning of keys.warnings) logger.warn({ problem: warning }, 'weak API key')
  for (const warning of unknownVariables(process.env)) logger.warn({ problem: warning }, 'unknown setting')
  if (keys.open) {
    logger.warn({ host }, config.host === null
      ? 'No TOOLGATE_API_KEYS_FILE: the service runs OPEN, as one tenant with every role, so it listens on 127.0.0.1 only. ' +
        'To serve other machines, give a keys file (docs/access.md) and set HOST=0.0.0.0.'
      : 'No TOOLGATE_API_KEYS_FILE: the service runs OPEN, as one tenant with every role. Do not expose it.')
  }

  const app = await buildApp(config, { logger, keys })
  try {
    // The schema check's one-time compile, before listening rather than in the first registration or MCP import.
    app.services.tools.prepare()
    app.services.tools.putAll(toolDefs)
    // Each server is tried once before listening; one that cannot be reached is `down` and retried, never a reason not to start.
    await app.services.mcp.startAll(mcpServers)
  } catch (err) {
    const problems = err instanceof InvalidToolError || err instanceof InvalidMcpServerError ? err.problems : [(err as Error).message]
    logger.fatal({ problems }, 'invalid tools file')
    process.stderr.write(`Invalid tools file:\n- ${problems.join('\n- ')}\n`)
    process.exit(2)
  }

  let stopping = false
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now')
      process.exit(1)
    }
    stopping = true
    app.services.draining = true
    const { engine } = app.services
    logger.info({ signal, inFlight: engine.inFlight }, 'draining: no new batches; waiting for batches in flight')
    const deadline = Date.now() + config.shutdownTimeoutMs
    while (engine.inFlight > 0 && Date.now() < deadline) await sleep(DRAIN_POLL_MS)
    if (engine.inFlight > 0) logger.warn({ inFlight: engine.inFlight }, 'shutdown deadline passed with batches in flight')
    // A batch past the deadline holds its connection open; close() would wait for it, so it gets a bounded grace.
    const closed = await Promise.race([app.close().then(() => true), sleep(CLOSE_GRACE_MS).then(() => false)])
    if (!closed) logger.warn('connections still open after the grace period; exiting anyway')
    await example?.close()
    await stopOtel()
    logger.info('stopped')
    logger.flush()
    process.exit(0)
  }
  process.on('SIGTERM', () => { void shutdown('SIGTERM') })
  process.on('SIGINT', () => { void shutdown('SIGINT') })

  const address = await app.listen({ port: config.port, host })
  app.log.info({ address, tools: app.services.tools.size }, 'toolgate ready')
}

/** Whether spans will be exported; a bad OTEL_* setting is reported by startOtel, once the logger exists. */
function tracingConfigured (): boolean {
  try {
    return otelEnabled(process.env)
  } catch {
    return false
  }
}

/** How often draining looks at the batches in flight. */
const DRAIN_POLL_MS = 50
/** After the drain, how long closing the server may take before the process exits anyway. */
const CLOSE_GRACE_MS = 2000

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

function withOrigin (def: unknown, origin: string): unknown {
  const d = def as { executor: { url: string } }
  const url = new URL(d.executor.url)
  return { ...d, executor: { ...d.executor, url: origin + url.pathname } }
}

await main()
