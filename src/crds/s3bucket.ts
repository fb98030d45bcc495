import {z} from 'zod'
import {crdNames} from './catalog.js'
import {defineCrd} from './define.js'
import {snakeSyncStatus} from './schema.js'

export const s3BucketSpec = z.object({
  name: z.string().min(1).describe('Name of the S3 bucket.'),
  region: z.string().optional()
    .describe('Region (an S3Cluster of the API); default_s3_bucket_cluster of the SystemConfig when absent.'),
  reclaim_policy: z.enum(['retain', 'delete']).default('retain')
    .describe('retain: the bucket stays when the CR is deleted; delete: the bucket is deleted with it.'),
})

export const s3BucketStatus = z.object({
  ...snakeSyncStatus,
  bucket_id: z.string().optional().describe('ID of the bucket in the API.'),
  bucket_name: z.string().optional().describe('Name of the bucket in the API.'),
  region: z.string().optional().describe('Region the bucket lives in.'),
  s3_region: z.string().optional().describe('S3 region string (S3_REGION).'),
  endpoint: z.string().optional().describe('S3 endpoint URL (S3_ENDPOINT).'),
  credentials_secret: z.string().optional().describe('Secret with the access credentials, s3-<bucket>-credentials.'),
  adopted: z.boolean().optional().describe('The bucket already existed in the API and was adopted.'),
})

export type S3BucketSpec = z.infer<typeof s3BucketSpec>
export type S3BucketStatus = z.infer<typeof s3BucketStatus>

export const s3BucketCrd = defineCrd({
  ...crdNames.S3Bucket,
  statusStyle: 'snake',
  description: 'An S3 bucket provisioned in the Polycrate API; its credentials are written to a Secret.',
  spec: s3BucketSpec,
  status: s3BucketStatus,
  printerColumns: [
    {name: 'Bucket', type: 'string', jsonPath: '.spec.name'},
    {name: 'Region', type: 'string', jsonPath: '.status.region'},
    {name: 'Secret', type: 'string', jsonPath: '.status.credentials_secret'},
    {name: 'Phase', type: 'string', jsonPath: '.status.phase'},
    {name: 'API ID', type: 'string', jsonPath: '.status.api_id', priority: 1},
  ],
})
