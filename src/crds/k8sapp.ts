import {z} from 'zod'
import {crdNames} from './catalog.js'
import {defineCrd} from './define.js'
import {snakeSyncStatus, timestamp} from './schema.js'

export const k8sAppSpec = z.object({
  name: z.string().optional().describe('Name of the app in the API; the block name or metadata.name when absent.'),
  namespace: z.string().optional().describe('Namespace the app runs in; the namespace of this CR when absent.'),
  description: z.string().optional().describe('Free-text description.'),
  kind: z.enum(['helm', 'polycrate', 'external']).optional()
    .describe('Kind of the app in the API: external for annotation-discovered apps without a block.'),
  byoa: z.boolean().optional().describe('Bring-your-own app (polycrate_k8sapp_byoa): kind external, no block.'),
  k8s_cluster: z.string().optional()
    .describe('API ID of the K8sCluster; the local cluster (OperatorConfig status) when absent.'),
  installed_version: z.string().optional().describe('Installed version reported to the API; block.version when absent.'),
  block: z.object({
    name: z.string().optional().describe('Name of the block.'),
    display_name: z.string().optional().describe('Human-readable name of the block.'),
    version: z.string().optional().describe('Version of the block.'),
    app_version: z.string().optional().describe('Version of the deployed application.'),
    from: z.string().optional().describe('Registry reference of the block.'),
    type: z.string().optional().describe('Type of the block, e.g. ingress-controller.'),
    flavor: z.string().optional().describe('Flavor of the block, e.g. nginx.'),
    kind: z.string().optional().describe('Kind of the block, e.g. helm or polycrate.'),
    chart: z.object({
      name: z.string().optional().describe('Name of the Helm chart.'),
      version: z.string().optional().describe('Version of the Helm chart.'),
      repo_url: z.string().optional().describe('URL of the Helm repository.'),
    }).optional().describe('Helm chart the block deploys.'),
  }).optional().describe('The Polycrate block that deployed the app (from the meta secret).'),
  workspace: z.object({
    name: z.string().optional().describe('Name of the workspace.'),
    organization: z.string().optional().describe('Name of the organization.'),
  }).optional().describe('Workspace the block belongs to; used to resolve the block ID in the API.'),
  action: z.object({
    name: z.string().optional().describe('Name of the last action, e.g. install or uninstall.'),
    status: z.string().optional().describe('Status of the last action, e.g. success, running or failed.'),
    last_executed_at: timestamp().optional().describe('When the last action ran.'),
  }).optional().describe('The last action run of the block; the installation status is derived from it.'),
  source: z.object({
    kind: z.string().describe('Kind of the discovery source: Secret, Pod, Ingress or HTTPRoute.'),
    name: z.string().describe('Name of the source object (meta secret, or the polycrate_k8sapp_name value).'),
    namespace: z.string().optional().describe('Namespace of the source object.'),
  }).optional().describe('What this app was discovered from; absent for hand-made ones.'),
})

export const k8sAppStatus = z.object({
  ...snakeSyncStatus,
  block_id: z.string().optional().describe('API ID of the resolved block.'),
  installed: z.boolean().optional(),
  installation_running: z.boolean().optional(),
  installation_failed: z.boolean().optional(),
  uninstalled: z.boolean().optional(),
  uninstallation_running: z.boolean().optional(),
  uninstallation_failed: z.boolean().optional(),
  installed_version: z.string().optional().describe('Installed version last reported to the API.'),
  artifacts: z.array(z.object({
    name: z.string().describe('Name of the Artifact CR.'),
    image: z.string().optional().describe('Container image reference.'),
    pod_count: z.number().int().optional().describe('Pods of this app running the image.'),
  })).optional().describe('Container images the pods of this app run.'),
  artifact_count: z.number().int().optional().describe('Number of container images.'),
  pods_total: z.number().int().optional(),
  pods_ready: z.number().int().optional(),
  pods_available: z.number().int().optional(),
  pods_unavailable: z.number().int().optional(),
  pods_restart_count_total: z.number().int().optional(),
  pods_restart_count_last_hour: z.number().int().optional(),
  pods_status_hash: z.string().optional().describe('Hash of the pod status last reported to the API.'),
  pods_status_updated_at: timestamp().optional(),
})

export type K8sAppSpec = z.infer<typeof k8sAppSpec>
export type K8sAppStatus = z.infer<typeof k8sAppStatus>

export const k8sAppCrd = defineCrd({
  ...crdNames.K8sApp,
  statusStyle: 'snake',
  description: 'A deployed app; created automatically from Polycrate meta secrets and annotated pods.',
  spec: k8sAppSpec,
  status: k8sAppStatus,
  printerColumns: [
    {name: 'Block', type: 'string', jsonPath: '.spec.block.name'},
    {name: 'Version', type: 'string', jsonPath: '.spec.block.version'},
    {name: 'Artifacts', type: 'integer', jsonPath: '.status.artifact_count'},
    {name: 'Phase', type: 'string', jsonPath: '.status.phase'},
  ],
})
