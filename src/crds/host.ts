import {z} from 'zod'
import {crdNames} from './catalog.js'
import {defineCrd} from './define.js'
import {snakeSyncStatus} from './schema.js'

export const hostSpec = z.object({
  name: z.string().min(1).describe('Name of the host in the API (the node name).'),
  hostname: z.string().min(1).describe('Host name (the node name).'),
  display_name: z.string().optional().describe('Human-readable name.'),
  kind: z.enum(['vm', 'bare_metal']).optional().describe('vm or bare_metal.'),
  role: z.enum(['k8s-worker', 'k8s-controlplane', 'generic', '']).optional()
    .describe('k8s-worker, k8s-controlplane or generic (from the node role labels).'),
  default_ipv4: z.string().optional().describe('IPv4 address of the node (ExternalIP, else InternalIP).'),
  default_ipv6: z.string().optional().describe('IPv6 address of the node.'),
  resource_cpu_cores: z.number().int().optional().describe('CPU cores (status.capacity.cpu).'),
  resource_cpu_type: z.string().optional().describe('CPU type.'),
  resource_cpu_architecture: z.string().optional().describe('CPU architecture (status.nodeInfo.architecture).'),
  resource_memory: z.number().int().optional().describe('Memory in MB (status.capacity.memory).'),
  resource_disk: z.number().int().optional().describe('Disk size.'),
  provider_id: z.string().optional().describe('Cloud provider ID of the node (spec.providerID).'),
  provider_type: z.string().optional().describe('Provider server type.'),
  provider_location: z.string().optional().describe('Provider location.'),
  provider_image_os_flavor: z.string().optional().describe('Operating system flavor (e.g. ubuntu).'),
  provider_image_os_version: z.string().optional().describe('Operating system version.'),
  provider_image_os_architecture: z.string().optional().describe('Operating system architecture.'),
  description: z.string().optional().describe('Free-text description.'),
  source: z.object({
    node_name: z.string().describe('Name of the node.'),
    node_uid: z.string().optional().describe('UID of the node.'),
  }).optional().describe('The node this host was discovered from.'),
})

export const hostStatus = z.object({
  ...snakeSyncStatus,
  node_ready: z.boolean().optional().describe('The node reports Ready=True.'),
  cloud_initialized: z.boolean().optional()
    .describe('The cloud controller has initialized the node (providerID, region label, taint removed).'),
  pop_name: z.string().optional().describe('PoP used as topology.kubernetes.io/region by the cloud controller.'),
})

export type HostSpec = z.infer<typeof hostSpec>
export type HostStatus = z.infer<typeof hostStatus>

export const hostCrd = defineCrd({
  ...crdNames.Host,
  statusStyle: 'snake',
  description: 'A node of the cluster as host in the Polycrate API; created automatically from Kubernetes nodes.',
  spec: hostSpec,
  status: hostStatus,
  printerColumns: [
    {name: 'Hostname', type: 'string', jsonPath: '.spec.hostname'},
    {name: 'IPv4', type: 'string', jsonPath: '.spec.default_ipv4'},
    {name: 'Role', type: 'string', jsonPath: '.spec.role'},
    {name: 'CPU', type: 'integer', jsonPath: '.spec.resource_cpu_cores'},
    {name: 'Memory MB', type: 'integer', jsonPath: '.spec.resource_memory', priority: 1},
    {name: 'Phase', type: 'string', jsonPath: '.status.phase'},
    {name: 'API ID', type: 'string', jsonPath: '.status.api_id', priority: 1},
  ],
})
