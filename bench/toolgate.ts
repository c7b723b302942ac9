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
import { BENCH_KEY } from './settings.js'
import { benchTools } from './workloads.js'

export async function startToolgate (executorUrl: string, logLevel: string): Promise<{ app: FastifyInstance, url: string }> {
  const config = loadConfig({ ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: logLevel })
  const keys = KeyRing.fromDocument({ keys: [{ key: BENCH_KEY, tenant: 'bench', roles: ['orchestrator', 'admin', 'operator'] }] })
  const app = await buildApp(config, { keys, logger: createLogger(config.logLevel) })
  app.services.tools.putAll(benchTools(executorUrl))
  const url = await app.listen({ host: config.host, port: config.port })
  return { app, url }
}
