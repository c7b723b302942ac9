/**
 * Bytes a memory store holds, in all and by tenant, for bounds that make
 * the tenant holding the most give up its own first (receipts, batch
 * answers): a tenant of large results never pushes out another's.
 */
export class TenantBytes {
  readonly #byTenant = new Map<string, number>()
  #total = 0

  /** Bytes held, of every tenant. */
  get total (): number {
    return this.#total
  }

  /** Adds `by` (negative: frees) to what `tenant` holds. */
  add (tenant: string, by: number): void {
    const held = (this.#byTenant.get(tenant) ?? 0) + by
    if (held > 0) this.#byTenant.set(tenant, held)
    else this.#byTenant.delete(tenant)
    this.#total += by
  }

  /** The tenant holding the most, if any holds anything. */
  largest (): string | undefined {
    let largest: string | undefined
    let most = 0
    for (const [tenant, bytes] of this.#byTenant) {
      if (bytes > most) {
        largest = tenant
        most = bytes
      }
    }
    return largest
  }
}
