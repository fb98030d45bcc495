import {artifactCrd} from './artifact.js'
import {backupCrd} from './backup.js'
import {backupScheduleCrd} from './backupschedule.js'
import {certificateCrd} from './certificate.js'
import type {CrdDefinition} from './define.js'
import {endpointCrd} from './endpoint.js'
import {hostCrd} from './host.js'
import {k8sAppCrd} from './k8sapp.js'
import {k8sClusterCrd} from './k8scluster.js'
import {k8sVolumeCrd} from './k8svolume.js'
import {operatorConfigCrd} from './operatorconfig.js'
import {organizationCrd} from './organization.js'
import {s3BucketCrd} from './s3bucket.js'

export {API_VERSION, GROUP, VERSION} from './define.js'

/** Every polycrate.io kind the operator serves, in the order `crds` prints them. */
export const allCrds: readonly CrdDefinition[] = [
  operatorConfigCrd,
  k8sClusterCrd,
  endpointCrd,
  hostCrd,
  k8sAppCrd,
  k8sVolumeCrd,
  backupCrd,
  backupScheduleCrd,
  certificateCrd,
  s3BucketCrd,
  artifactCrd,
  organizationCrd,
]

/** Finds a kind by kind, plural, singular or short name, in any case. */
export function findCrd(name: string): CrdDefinition | undefined {
  const wanted = name.trim().toLowerCase()
  return allCrds.find((def) =>
    [def.kind, def.plural, def.singular, ...def.shortNames].some((candidate) => candidate.toLowerCase() === wanted),
  )
}
