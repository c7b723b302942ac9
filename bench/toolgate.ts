/**
 * toolgate as the bench runs it: the built app (buildApp, as src/server.ts
 * does), one orchestrator API key, the bench tools, listening on 127.0.0.1.
 * Logs go to stdout at the shipped default level (info) unless told
 * otherwise; the parent sends that stdout to /dev/null.
 */
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../src/app.js'
import { KeyRing } from '../src/auth/keys.js'
import { loadConfig } from '../src/config.js'
import { createLogger } from '../src/logger.js'
import { createStore } from '../src/store/create.js'
import type { RedisTraffic } from '../src/store/redis.js'
import { BENCH_KEY } from './settings.js'
import { benchTools } from './workloads.js'

/**
 * `store` is TOOLGATE_STORE's value ('memory' or a redis:// URL). The store
 * is made here, as services.ts would make it, so its Redis traffic can be
 * read (`traffic`; zeros for the memory store).
 */
export async function startToolgate (executorUrl: string, logLevel: string, store = 'memory'): Promise<{ app: FastifyInstance, url: string, traffic: () => RedisTraffic }> {
  const config = loadConfig({ ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: logLevel, TOOLGATE_STORE: store })
  const keys = KeyRing.fromDocument({ keys: [{ key: BENCH_KEY, tenant: 'bench', roles: ['orchestrator', 'admin', 'operator'] }] })
  const logger = createLogger(config.logLevel)
  const made = createStore(config, logger)
  const traffic = (): RedisTraffic => ('traffic' in made && typeof made.traffic === 'function' ? (made.traffic as () => RedisTraffic)() : { roundTrips: 0, commands: 0 })
  const app = await buildApp(config, { keys, logger, store: made })
  app.services.tools.putAll(benchTools(executorUrl))
  const url = await app.listen({ host: config.host ?? '127.0.0.1', port: config.port })
  return { app, url, traffic }
}

/** The name toolgate offers the upstream's tool under, in the `/mcp` bench rows. */
export const IMPORTED_TOOL = 'up_look'

/** toolgate with the bench upstream MCP server imported (prefix `up_`), for the `/mcp` rows (bench/mcp-endpoint.ts). */
export async function startToolgateMcp (upstreamUrl: string, logLevel: string): Promise<{ app: FastifyInstance, url: string }> {
  const config = loadConfig({ ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: logLevel, TOOLGATE_STORE: 'memory' })
  const keys = KeyRing.fromDocument({ keys: [{ key: BENCH_KEY, tenant: 'bench', roles: ['orchestrator', 'admin', 'operator'] }] })
  const app = await buildApp(config, { keys, logger: createLogger(config.logLevel) })
  await app.services.mcp.startAll([{ name: 'up', transport: 'streamableHttp', url: upstreamUrl, prefix: 'up_', trust: 'trusted' }])
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url }
}
