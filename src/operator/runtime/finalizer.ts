/**
 * A finalizer of ours on an object, in the shape of kube-rs' `finalizer()`: a reconcile either applies (the object
 * lives: the finalizer goes on before any external state exists) or cleans up (the object is being deleted: the
 * external state goes, then the finalizer). Every write carries the object's resourceVersion, so a finalizer list
 * changed by someone else in between is a conflict and a retry, never a lost finalizer.
 *
 * A CR whose CRD is being deleted is not a user deleting it: `crd` names the CRD, and while it goes the cleanup is
 * skipped (the external state is kept, to be adopted when the CRD and the CR come back) and only the finalizer is
 * released.
 */
import type {KubeClient, KubeObject, ResourceRef} from '../../kube/client.js'
import {objectRef} from '../../kube/resources.js'
import {crdGoing} from './crd-gate.js'

/** What a reconcile does with an object, by its deletion mark and our finalizer (pure). */
export type FinalizerStep = 'apply' | 'cleanup' | 'ignore'

export function finalizerStep(object: KubeObject, name: string): FinalizerStep {
  if (!object.metadata?.deletionTimestamp) return 'apply'
  return finalizersOf(object).includes(name) ? 'cleanup' : 'ignore'
}

function finalizersOf(object: KubeObject): string[] {
  const list = object.metadata?.finalizers
  return Array.isArray(list) ? (list as string[]) : []
}

export interface FinalizerOptions {
  client: KubeClient
  /** The finalizer's name (from the conventions module). */
  name: string
  /** The object's resource (group, version, plural). */
  resource: ResourceRef
  /** The CRD of the object, when it is a custom resource. */
  crd?: string
}

export class Finalizer<T extends KubeObject> {
  constructor(private readonly options: FinalizerOptions) {}

  get name(): string {
    return this.options.name
  }

  has(object: T): boolean {
    return finalizersOf(object).includes(this.options.name)
  }

  /** Puts the finalizer on (nothing when it is there). */
  async add(object: T, signal: AbortSignal): Promise<void> {
    if (this.has(object)) return
    await this.write(object, [...finalizersOf(object), this.options.name], signal)
  }

  /** Takes the finalizer off (nothing when it is not there). */
  async release(object: T, signal: AbortSignal): Promise<void> {
    if (!this.has(object)) return
    await this.write(object, finalizersOf(object).filter((name) => name !== this.options.name), signal)
  }

  /**
   * The Cleanup half for an object being deleted: runs `cleanup` (unless the object's CRD is going: then `kept` is
   * told and nothing external is touched) and releases the finalizer. A failing cleanup keeps the finalizer, and the
   * reconcile's error retries it. Returns false for an object that is not being deleted (the caller applies).
   */
  async finalize(object: T, signal: AbortSignal, handlers: {cleanup: () => Promise<void>; kept?: () => void}): Promise<boolean> {
    const step = finalizerStep(object, this.options.name)
    if (step === 'apply') return false
    if (step === 'ignore') return true
    if (this.options.crd && await crdGoing(this.options.client, this.options.crd)) handlers.kept?.()
    else await handlers.cleanup()
    await this.release(object, signal)
    return true
  }

  private async write(object: T, finalizers: string[], signal: AbortSignal): Promise<void> {
    await this.options.client.mergePatch(objectRef(this.options.resource, object), {metadata: {finalizers, resourceVersion: object.metadata?.resourceVersion}}, {signal})
  }
}
