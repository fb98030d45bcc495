import {z} from 'zod'
import {crdNames} from './catalog.js'
import {defineCrd} from './define.js'
import {snakeSyncStatus, timestamp} from './schema.js'

export const artifactSpec = z.object({
  image: z.string().min(1).describe('Full image reference, e.g. cargo.ayedo.cloud/library/nginx:1.25.3.'),
  registry: z.string().optional().describe('Registry host, e.g. docker.io.'),
  repository: z.string().optional().describe('Repository inside the registry, e.g. library/nginx.'),
  tag: z.string().optional().describe('Image tag.'),
  digest: z.string().optional().describe('Image digest (sha256:…), if known.'),
  usage: z.object({
    namespaces: z.array(z.string()).optional().describe('Namespaces with pods running the image.'),
    pod_count: z.number().int().optional().describe('Number of pods running the image.'),
    k8s_apps: z.array(z.object({
      name: z.string().describe('Name of the K8sApp CR.'),
      namespace: z.string().optional().describe('Namespace of the K8sApp CR.'),
    })).optional().describe('K8sApps whose pods run the image.'),
  }).optional().describe('Where the image is used in the cluster.'),
})

export const artifactStatus = z.object({
  ...snakeSyncStatus,
  last_seen_at: timestamp().optional().describe('Last time a running pod used the image; drives the stale sweep.'),
})

export type ArtifactSpec = z.infer<typeof artifactSpec>
export type ArtifactStatus = z.infer<typeof artifactStatus>

export const artifactCrd = defineCrd({
  ...crdNames.Artifact,
  statusStyle: 'snake',
  description: 'A container image running in the cluster; created automatically from the pods.',
  spec: artifactSpec,
  status: artifactStatus,
  printerColumns: [
    {name: 'Registry', type: 'string', jsonPath: '.spec.registry'},
    {name: 'Repository', type: 'string', jsonPath: '.spec.repository'},
    {name: 'Tag', type: 'string', jsonPath: '.spec.tag'},
    {name: 'Pods', type: 'integer', jsonPath: '.spec.usage.pod_count'},
    {name: 'Phase', type: 'string', jsonPath: '.status.phase'},
    {name: 'Image', type: 'string', jsonPath: '.spec.image', priority: 1},
    {name: 'API ID', type: 'string', jsonPath: '.status.api_id', priority: 1},
  ],
})
