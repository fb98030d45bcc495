/** Which updates are worth a reconcile (controller-runtime's predicates). All pure. */
import {isDeepStrictEqual} from 'node:util'
import type {KubeObject} from '../../kube/client.js'

export type UpdatePredicate<T extends KubeObject = KubeObject> = (old: T, object: T) => boolean

/** The spec changed (metadata.generation is bumped only for spec changes of objects with a status subresource). */
export const generationChanged: UpdatePredicate = (old, object) =>
  old.metadata?.generation === undefined || old.metadata.generation !== object.metadata?.generation

export const labelsChanged: UpdatePredicate = (old, object) =>
  !isDeepStrictEqual(old.metadata?.labels ?? {}, object.metadata?.labels ?? {})

export const annotationsChanged: UpdatePredicate = (old, object) =>
  !isDeepStrictEqual(old.metadata?.annotations ?? {}, object.metadata?.annotations ?? {})

/** Deletion started, or the finalizers changed (a finalizer removed by someone else may let us go on). */
export const deletionOrFinalizersChanged: UpdatePredicate = (old, object) =>
  old.metadata?.deletionTimestamp !== object.metadata?.deletionTimestamp ||
  !isDeepStrictEqual(old.metadata?.finalizers ?? [], object.metadata?.finalizers ?? [])

/** Deletion started (deletionTimestamp set). */
export const deletionStarted: UpdatePredicate = (old, object) =>
  old.metadata?.deletionTimestamp !== object.metadata?.deletionTimestamp

export function any<T extends KubeObject>(...predicates: UpdatePredicate<T>[]): UpdatePredicate<T> {
  return (old, object) => predicates.some((predicate) => predicate(old, object))
}

/**
 * For our own CRs: reconcile on spec, label, annotation, finalizer or deletion changes, but not on the status
 * writes the operator makes itself.
 */
export const specOrMetadataChanged: UpdatePredicate = any(generationChanged, labelsChanged, annotationsChanged, deletionOrFinalizersChanged)

/** Like specOrMetadataChanged, but blind to finalizer changes: for a controller whose own finalizer write must not requeue. */
export const specMetadataOrDeletionChanged: UpdatePredicate = any(generationChanged, labelsChanged, annotationsChanged, deletionStarted)

/**
 * Anything but the resourceVersion changed: for sources cached through a transform that keeps only what discovery
 * reads, so updates of the fields it dropped (heartbeats, timestamps) cause no reconcile.
 */
export const contentChanged: UpdatePredicate = (old, object) => {
  const {resourceVersion: _a, ...before} = old.metadata ?? {}
  const {resourceVersion: _b, ...after} = object.metadata ?? {}
  return !isDeepStrictEqual({...old, metadata: before}, {...object, metadata: after})
}
