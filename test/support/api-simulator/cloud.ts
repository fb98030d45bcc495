/**
 * What the cloud controller needs of the simulated API: the agent's PoP (the health report's `pop_name`, used as
 * the nodes' region) and load balancer instances whose public IP (`ip_address`) is only known some time after they
 * were created, as with a real provisioning backend. Time is the simulator's clock (`advanceTime` moves it too).
 */

interface Addressable {
  id: string
  ip_address?: unknown
}

export class CloudSimulation {
  /** The PoP the health report answers with (`pop_name`); '' = the agent has none. */
  popName = ''
  popId: string | null = null
  /** How long after its creation a load balancer instance gets its IP. 0 (default) = at once. */
  loadBalancerAddressDelayMs = 0
  private addressCount = 0
  /** Instance id → the simulated time its IP is due. */
  private readonly pending = new Map<string, number>()

  /** On create: the IP at once, or `null` until the delay has passed. An IP given by the caller is kept. */
  created(object: Addressable, now: number): void {
    if (object.ip_address !== undefined && object.ip_address !== null) return
    if (this.loadBalancerAddressDelayMs <= 0) object.ip_address = this.nextAddress()
    else {
      object.ip_address = null
      this.pending.set(object.id, now + this.loadBalancerAddressDelayMs)
    }
  }

  /** Gives every instance whose delay has passed its IP (called before every request and store read). */
  assignDueAddresses(find: (id: string) => Addressable | undefined, now: number): void {
    for (const [id, due] of this.pending) {
      if (due > now) continue
      this.pending.delete(id)
      const object = find(id)
      if (object && (object.ip_address === undefined || object.ip_address === null)) object.ip_address = this.nextAddress()
    }
  }

  private nextAddress(): string {
    this.addressCount += 1
    return `203.0.113.${(this.addressCount % 254) + 1}`
  }
}
