import type { FastifyRequest } from 'fastify'

/** The admin changes an audit line names. */
export type AuditAction = 'tool.created' | 'tool.replaced' | 'tool.deleted' | 'mcp_server.created' | 'mcp_server.replaced' | 'mcp_server.deleted' | 'mcp_server.refreshed' | 'mcp_server.pins_approved'

/**
 * One `admin change` line per change an admin made: who (tenant and key
 * name, never the key), what (the action and the name of the tool or MCP
 * server), bound to the request id. Never the definition itself: an MCP
 * server's headers and environment hold secrets.
 */
export function audit (req: FastifyRequest, action: AuditAction, target: string): void {
  const line: Record<string, string> = { reqId: req.id }
  const principal = req.principal
  if (principal !== null) {
    line.tenant = principal.tenant
    if (principal.name !== undefined) line.keyName = principal.name
  }
  line.action = action
  line.target = target
  req.server.log.info(line, 'admin change')
}
