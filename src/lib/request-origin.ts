/**
 * Which controller a request is made for, told by the abort signal it carries. Every write of a reconcile takes the
 * reconcile's signal (one per controller), so the clients can name the controller in their User-Agent the way
 * kube-controller-manager names each of its controllers: `polycrate-operator/1.4.0 controller/host-discovery`. The
 * apiserver's audit log and the Polycrate API's request log then say which controller wrote what.
 */
const origins = new WeakMap<AbortSignal, string>()

/** Requests carrying `signal` are made for `controller`. */
export function nameSignal(signal: AbortSignal, controller: string): void {
  origins.set(signal, controller)
}

/** The User-Agent of a request: `base`, plus the controller its signal names, if any. */
export function userAgentFor(base: string, signal: AbortSignal | undefined): string {
  const controller = signal && origins.get(signal)
  return controller ? `${base} controller/${controller}` : base
}
