/**
 * One bench server in its own process, so the load generator does not share
 * its event loop: `child.js executor`, `child.js relay <executorUrl>`,
 * `child.js floor <executorUrl>`, `child.js toolgate <executorUrl> <logLevel> [store]`,
 * `child.js mcp-upstream`, `child.js mcp-proxy <upstreamUrl>` or `child.js toolgate-mcp <upstreamUrl> <logLevel>`. It reports `{ready, url}`
 * over IPC, answers `cpu` with its CPU time, and exits on `stop` or when the
 * parent goes away (so a crashed bench leaves nothing running).
 */

/** Messages from the parent. */
/** `probe` is answered by the probe preloaded into it (bench/tail-probe.ts, bench/mcp-steps-probe.ts), never by this file. */
export type ChildRequest = { type: 'stop' } | { type: 'cpu', id: number } | { type: 'probe', id: number }
/** Messages to the parent. */
export type ChildReply =
  | { type: 'ready', url: string }
  | { type: 'cpu', id: number, userUs: number, systemUs: number, rss: number, loopActiveMs: number, loopIdleMs: number, storeRoundTrips: number, storeCommands: number }

const send = (msg: ChildReply): void => { process.send?.(msg) }

// Each role imports only what it runs: the executor and the relay never load toolgate.
async function start (role: string, args: string[]): Promise<{ url: string, close: () => Promise<void>, traffic?: () => { roundTrips: number, commands: number } }> {
  switch (role) {
    case 'executor': {
      const app = (await import('./executor.js')).buildBenchExecutor()
      return { url: await app.listen({ host: '127.0.0.1', port: 0 }), close: () => app.close() }
    }
    case 'relay': {
      const relay = (await import('./relay.js')).buildRelay(args[0]!)
      return { url: await relay.app.listen({ host: '127.0.0.1', port: 0 }), close: relay.close }
    }
    case 'floor': {
      const floor = (await import('./floor.js')).buildFloor(args[0]!)
      return { url: await floor.app.listen({ host: '127.0.0.1', port: 0 }), close: floor.close }
    }
    case 'toolgate': {
      const { app, url, traffic } = await (await import('./toolgate.js')).startToolgate(args[0]!, args[1] ?? 'info', args[2])
      return { url, close: () => app.close(), traffic }
    }
    case 'mcp-upstream':
      return (await import('./mcp-servers.js')).startUpstream()
    case 'mcp-proxy':
      return (await import('./mcp-servers.js')).startProxy(args[0]!)
    case 'toolgate-mcp': {
      const { app, url } = await (await import('./toolgate.js')).startToolgateMcp(args[0]!, args[1] ?? 'info')
      return { url, close: () => app.close() }
    }
    default:
      throw new Error(`unknown bench child role ${JSON.stringify(role)}`)
  }
}

const server = await start(process.argv[2] ?? '', process.argv.slice(3))
const stop = async (): Promise<void> => {
  // Closing waits for keep-alive sockets; do not let that hold the exit (and the --cpu-prof write) up.
  await Promise.race([server.close(), new Promise((resolve) => setTimeout(resolve, 1000).unref())])
  process.exit(0)
}
process.on('message', (msg: ChildRequest) => {
  if (msg.type === 'stop') void stop()
  else if (msg.type === 'cpu') {
    const { user, system } = process.cpuUsage()
    const loop = performance.eventLoopUtilization()
    const traffic = server.traffic?.() ?? { roundTrips: 0, commands: 0 }
    send({ type: 'cpu', id: msg.id, userUs: user, systemUs: system, rss: process.memoryUsage.rss(), loopActiveMs: loop.active, loopIdleMs: loop.idle, storeRoundTrips: traffic.roundTrips, storeCommands: traffic.commands })
  }
})
process.on('disconnect', () => { void stop() })
send({ type: 'ready', url: server.url })
