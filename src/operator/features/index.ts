import {endpointDiscoveryFeature} from '../discovery/endpoint-discovery-feature.js'
import type {Feature} from '../features.js'

/** Every feature the operator can run, in the order they appear in the OperatorConfig status. */
export const allFeatures: readonly Feature[] = [endpointDiscoveryFeature]
