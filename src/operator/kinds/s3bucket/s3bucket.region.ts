/** Which S3 region a bucket goes to: `spec.region`, or the API's default S3 cluster's region. */
import {ApiNotFoundError, type PolycrateApiClient} from '../../../api/index.js'

/** A region the bucket can be created in: the API's region id and the name users write. */
export interface ResolvedRegion {
  id: string
  name: string
}

/** `spec.region`, or the region of SystemConfig `default_s3_bucket_cluster`; a string when it cannot be resolved. */
export async function resolveRegion(api: PolycrateApiClient, wanted: string | undefined, signal: AbortSignal): Promise<ResolvedRegion | {problem: string; reason: string}> {
  const regions = await api.s3Regions.listAll({}, {signal})
  let name = wanted
  if (!name) {
    const defaultCluster = (await api.systemConfig.get({signal})).default_s3_bucket_cluster
    if (!defaultCluster) {
      return {reason: 'NoDefaultRegion', problem: 'spec.region is empty and the Polycrate API has no default (SystemConfig default_s3_bucket_cluster): set spec.region, or set the default under System Settings in the dashboard.'}
    }
    const byCluster = regions.find((region) => region.legacy_s3_cluster === defaultCluster)
    if (byCluster) return {id: byCluster.id, name: byCluster.name}
    const cluster = await api.s3Clusters.get(defaultCluster, {signal}).catch((error: unknown) => {
      if (error instanceof ApiNotFoundError) return undefined
      throw error
    })
    const clusterRegion = cluster?.region
    name = typeof clusterRegion === 'object' && clusterRegion ? clusterRegion.name ?? undefined : undefined
    const byId = regions.find((region) => region.id === clusterRegion || (typeof clusterRegion === 'object' && region.id === clusterRegion?.id))
    if (byId) return {id: byId.id, name: byId.name}
    if (!name) return {reason: 'NoDefaultRegion', problem: `The default S3 cluster ${defaultCluster} of the Polycrate API (SystemConfig default_s3_bucket_cluster) has no region: set spec.region.`}
  }
  const found = regions.find((region) => region.name === name)
  if (!found) {
    const known = regions.map((region) => region.name).sort().join(', ') || 'none'
    return {reason: 'RegionUnknown', problem: `Region ${JSON.stringify(name)} is not an S3 region of the Polycrate API (known: ${known}): fix spec.region.`}
  }
  return {id: found.id, name: found.name}
}
