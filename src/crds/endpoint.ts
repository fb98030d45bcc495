import {z} from 'zod'
import {crdNames} from './catalog.js'
import {defineCrd} from './define.js'
import {camelSyncStatus} from './schema.js'

export const endpointSpec = z.object({
  displayName: z.string().optional().describe('Human-readable name; the host for discovered endpoints.'),
  remoteAddress: z.string().min(1).describe('Host name or IP address to check.'),
  remotePort: z.number().int().min(1).max(65535).optional().describe('Port to check; 443 with TLS, 80 without.'),
  kind: z.enum(['http', 'tcp', 'icmp', 'dns']).default('http').describe('Kind of check.'),
  tls: z.boolean().optional().describe('Check over TLS (https).'),
  path: z.string().optional().describe('HTTP path of the check.'),
  timeout: z.number().int().min(1).optional().describe('Timeout of one check in seconds.'),
  interval: z.number().int().min(1).optional().describe('Seconds between two checks.'),
  expectedStatusCodes: z.array(z.number().int().min(100).max(599)).optional()
    .describe('HTTP status codes that count as success.'),
  expectedBody: z.string().optional().describe('The check succeeds only if the response body contains this text.'),
  k8sAppName: z.string().optional().describe('K8sApp this endpoint belongs to (from polycrate_k8sapp_name).'),
  byoa: z.boolean().optional().describe('The K8sApp is a bring-your-own app (polycrate_k8sapp_byoa).'),
  source: z.object({
    kind: z.enum(['Ingress', 'HTTPRoute']).describe('Kind of the discovery source.'),
    name: z.string().describe('Name of the source object.'),
    namespace: z.string().optional().describe('Namespace of the source object.'),
  }).optional().describe('The Ingress or HTTPRoute this endpoint was discovered from; absent for hand-made ones.'),
})

export const endpointStatus = z.object({
  ...camelSyncStatus,
  k8sAppID: z.string().optional().describe('API ID of the associated K8sApp.'),
})

export type EndpointSpec = z.infer<typeof endpointSpec>
export type EndpointStatus = z.infer<typeof endpointStatus>

export const endpointCrd = defineCrd({
  ...crdNames.Endpoint,
  statusStyle: 'camel',
  description: 'An endpoint the Polycrate API monitors; created automatically from Ingress and HTTPRoute hosts.',
  spec: endpointSpec,
  status: endpointStatus,
  printerColumns: [
    {name: 'Host', type: 'string', jsonPath: '.spec.remoteAddress'},
    {name: 'Port', type: 'integer', jsonPath: '.spec.remotePort'},
    {name: 'Path', type: 'string', jsonPath: '.spec.path'},
    {name: 'Phase', type: 'string', jsonPath: '.status.phase'},
    {name: 'API ID', type: 'string', jsonPath: '.status.apiID', priority: 1},
  ],
})
