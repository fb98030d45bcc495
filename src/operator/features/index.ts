import {createApiSyncFeature} from '../agent/api-sync-feature.js'
import type {ApiSession} from '../agent/api-session.js'
import {EndpointDiscoveryReconciler} from '../discovery/endpoint-discovery-feature.js'
import {BackupDiscoveryReconciler} from '../discovery/backup-discovery-feature.js'
import {CertificateDiscoveryReconciler} from '../discovery/certificate-discovery-feature.js'
import {HostDiscoveryReconciler} from '../discovery/host-discovery-feature.js'
import {K8sVolumeDiscoveryReconciler} from '../discovery/volume-discovery-feature.js'
import {Dns01Webhook} from '../dns/dns01-webhook.js'
import {ExternalDnsWebhook} from '../dns/external-dns-webhook.js'
import {ArtifactDiscoveryReconciler} from '../discovery/artifacts-discovery-feature.js'
import {K8sAppDiscoveryReconciler} from '../discovery/k8sapps-discovery-feature.js'
import type {Feature} from '../features.js'
import {CloudNodeController} from '../cloud/cloud-node-feature.js'
import {ServiceLoadBalancerController} from '../cloud/service-load-balancer-feature.js'
import {createMonitoringFeature} from '../monitoring/monitoring-feature.js'
import {BackupController, BackupScheduleController} from '../sync/backup-sync-feature.js'
import {CertificateController} from '../sync/certificate-sync-feature.js'
import {EndpointController} from '../sync/endpoint-sync-feature.js'
import {HostController} from '../sync/host-sync-feature.js'
import {K8sVolumeController} from '../sync/volume-sync-feature.js'
import {K8sClusterReconciler} from '../resources/k8scluster-feature.js'
import {S3BucketReconciler} from '../resources/s3bucket-feature.js'
import {K8sAppPodStatusController} from '../sync/k8sapp-pod-status.js'
import {K8sAppController, K8sAppEndpointLinker} from '../sync/k8sapp-sync-feature.js'

/** Every feature the operator runs, in the order they appear in the OperatorConfig status. */
export function defaultFeatures(session: ApiSession): readonly Feature[] {
  return [
    createApiSyncFeature(session),
    EndpointDiscoveryReconciler,
    EndpointController(session),
    HostDiscoveryReconciler,
    HostController(session),
    K8sVolumeDiscoveryReconciler,
    K8sVolumeController(session),
    ...BackupDiscoveryReconciler,
    BackupController(session),
    BackupScheduleController(session),
    CertificateDiscoveryReconciler,
    CertificateController(session),
    CloudNodeController(session),
    ServiceLoadBalancerController(session),
    K8sClusterReconciler(session),
    S3BucketReconciler(session),
    ExternalDnsWebhook(session),
    Dns01Webhook(session),
    createMonitoringFeature(session),
    K8sAppDiscoveryReconciler,
    K8sAppController(session),
    K8sAppPodStatusController(session),
    K8sAppEndpointLinker(),
    ArtifactDiscoveryReconciler,
  ]
}
