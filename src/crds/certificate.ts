import {z} from 'zod'
import {crdNames} from './catalog.js'
import {defineCrd} from './define.js'
import {freeForm, snakeSyncStatus, timestamp} from './schema.js'

export const certificateSpec = z.object({
  name: z.string().min(1).describe('Name of the certificate in the API (the cert-manager Certificate name).'),
  display_name: z.string().optional().describe('Human-readable name.'),
  namespace: z.string().optional().describe('Namespace of the cert-manager Certificate.'),
  secret_name: z.string().min(1).describe('Secret the certificate is stored in.'),
  kind: z.enum(['tls', 'mtls']).optional().describe('tls or mtls.'),
  dns_names: z.array(z.string()).optional().describe('DNS names of the certificate.'),
  ip_addresses: z.array(z.string()).optional().describe('IP addresses of the certificate.'),
  issuer_name: z.string().optional().describe('Name of the issuer.'),
  issuer_kind: z.enum(['issuer', 'clusterissuer']).optional().describe('Kind of the issuer, lower-case.'),
  issuer_group: z.string().optional().describe('API group of the issuer, e.g. cert-manager.io.'),
  certificate_status: z.enum(['ready', 'pending', 'failed', 'expired', 'expiring_soon']).optional()
    .describe('ready, pending, failed, expired or expiring_soon (30 days before not_after).'),
  is_ready: z.boolean().optional().describe('The cert-manager Ready condition is True.'),
  not_before: timestamp().optional().describe('Start of validity.'),
  not_after: timestamp().optional().describe('End of validity.'),
  renewal_time: timestamp().optional().describe('When cert-manager renews the certificate.'),
  current_challenge_type: z.string().optional().describe('Type of the running ACME challenge: http01 or dns01.'),
  current_challenge_status: z.string().optional().describe('Status of the running ACME challenge.'),
  challenge_reason: z.string().optional().describe('Reason reported for the ACME challenge.'),
  last_failure_time: timestamp().optional().describe('Last failed issuance.'),
  failure_reason: z.string().optional().describe('Why the last issuance failed.'),
  cert_manager_status: freeForm().optional().describe('Raw status of the cert-manager Certificate.'),
  source_cert_manager: z.object({
    name: z.string().describe('Name of the cert-manager Certificate.'),
    namespace: z.string().optional().describe('Namespace of the cert-manager Certificate.'),
    uid: z.string().optional().describe('UID of the cert-manager Certificate.'),
    revision: z.number().int().optional().describe('status.revision of the cert-manager Certificate.'),
  }).optional().describe('The cert-manager Certificate this CR was discovered from.'),
})

export const certificateStatus = z.object({
  ...snakeSyncStatus,
})

export type CertificateSpec = z.infer<typeof certificateSpec>
export type CertificateStatus = z.infer<typeof certificateStatus>

export const certificateCrd = defineCrd({
  ...crdNames.Certificate,
  statusStyle: 'snake',
  description: 'A TLS certificate; created automatically from cert-manager Certificates.',
  spec: certificateSpec,
  status: certificateStatus,
  printerColumns: [
    {name: 'Issuer', type: 'string', jsonPath: '.spec.issuer_name'},
    {name: 'Ready', type: 'boolean', jsonPath: '.spec.is_ready'},
    {name: 'Status', type: 'string', jsonPath: '.spec.certificate_status'},
    {name: 'Sync', type: 'string', jsonPath: '.status.sync_status'},
    {name: 'Not After', type: 'date', jsonPath: '.spec.not_after', priority: 1},
    {name: 'Phase', type: 'string', jsonPath: '.status.phase', priority: 1},
    {name: 'API ID', type: 'string', jsonPath: '.status.api_id', priority: 1},
  ],
})
