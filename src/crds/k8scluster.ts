import {z} from 'zod'
import {crdNames} from './catalog.js'
import {defineCrd} from './define.js'
import {camelSyncStatus, secretKeyRef, timestamp} from './schema.js'

export const k8sClusterSpec = z.object({
  displayName: z.string().optional().describe('Human-readable name of the cluster.'),
  apiServer: z.string().optional().describe('URL of the Kubernetes API server, e.g. https://api.example.com:6443.'),
  authentication: z.object({
    serviceAccountToken: z.object({
      secretRef: secretKeyRef.describe('Secret key that holds the service account token.'),
    }).optional().describe('Authenticate with a service account token.'),
    kubeconfig: z.object({
      secretRef: secretKeyRef.describe('Secret key that holds the kubeconfig.'),
    }).optional().describe('Authenticate with a kubeconfig.'),
  }).optional().describe('How to authenticate against the cluster; the Secrets live in the namespace of this CR.'),
  caCertificate: z.string().optional().describe('PEM CA certificate of the API server.'),
  kind: z.enum(['polycrate', 'generic', 'loopback']).optional()
    .describe('Kind of the cluster in the API; generic when absent.'),
  description: z.string().optional().describe('Free-text description.'),
})

export const k8sClusterStatus = z.object({
  ...camelSyncStatus,
  kubernetesVersion: z.string().optional().describe('Version the API server reported.'),
  reachable: z.boolean().optional().describe('The API server answered the last probe.'),
  lastProbedAt: timestamp().optional().describe('Time of the last probe of the API server.'),
})

export type K8sClusterSpec = z.infer<typeof k8sClusterSpec>
export type K8sClusterStatus = z.infer<typeof k8sClusterStatus>

export const k8sClusterCrd = defineCrd({
  ...crdNames.K8sCluster,
  statusStyle: 'camel',
  description: 'An external Kubernetes cluster registered with the Polycrate API.',
  spec: k8sClusterSpec,
  status: k8sClusterStatus,
  printerColumns: [
    {name: 'API Server', type: 'string', jsonPath: '.spec.apiServer'},
    {name: 'Version', type: 'string', jsonPath: '.status.kubernetesVersion'},
    {name: 'Phase', type: 'string', jsonPath: '.status.phase'},
    {name: 'API ID', type: 'string', jsonPath: '.status.apiID', priority: 1},
  ],
})
