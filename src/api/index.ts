/** The Polycrate API client: public API. */
export {
  PolycrateApiClient,
  parseRetryAfter,
  resourceLabel,
  type ApiRequest,
  type ApiResponse,
  type HttpMethod,
  type PolycrateApiClientOptions,
  type Query,
  type QueryScalar,
  type RetryOptions,
} from './client.js'
export {
  ApiAuthError,
  ApiConflictError,
  ApiContractError,
  ApiError,
  ApiNetworkError,
  ApiNotFoundError,
  ApiRateLimitError,
  ApiServerError,
  ApiValidationError,
  describeIssues,
  errorForStatus,
  formatPath,
  parseErrorBody,
  type ApiErrorInit,
  type ApiErrorItem,
} from './errors.js'
export {
  AgentApi,
  CertificatesResource,
  DnsZonesResource,
  OperatorRolloutApi,
  ReadOnlyResource,
  Resource,
  S3BucketsResource,
  SystemConfigApi,
  SystemStatusApi,
  WorkspacesResource,
  type CallOptions,
  type DeleteOutcome,
  type Filters,
  type PageParams,
} from './resources.js'
export {httpTransport, type Transport, type TransportInit, type TransportResponse} from './http-transport.js'
export {adoptOrCreate, findExisting, type AdoptableResource, type AdoptOrCreateOptions, type AdoptOrCreateResult} from './adopt.js'
export * from './schemas.js'
export type * from './requests.js'
export {rolloutBlocker, rolloutCluster, rolloutDashboard, type RolloutCluster, type RolloutDashboard} from './rollout-types.js'
