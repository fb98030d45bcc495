import {createApiSyncFeature} from './agent/api-sync-feature.js'
import type {ApiSession} from './agent/api-session.js'
import {EndpointDiscoveryReconciler} from './kinds/endpoint/discovery.js'
import {BackupDiscoveryReconciler} from './kinds/backup/discovery.js'
import {CertificateDiscoveryReconciler} from './kinds/certificate/discovery.js'
import {HostDiscoveryReconciler} from './kinds/host/discovery.js'
import {K8sVolumeDiscoveryReconciler} from './kinds/volume/discovery.js'
import {Dns01Webhook} from './dns/dns01-webhook.js'
import {ExternalDnsWebhook} from './dns/external-dns-webhook.js'
import {ArtifactDiscoveryReconciler} from './kinds/artifact/discovery.js'
import {K8sAppDiscoveryReconciler} from './kinds/k8sapp/discovery.js'
import type {Feature} from './runtime/feature.js'
import {CloudNodeController} from './cloud/cloud-node-feature.js'
import {ServiceLoadBalancerController} from './cloud/service-load-balancer-feature.js'
import {createMonitoringFeature} from './monitoring/monitoring-feature.js'
import {BackupController, BackupScheduleController} from './kinds/backup/sync.js'
import {CertificateController} from './kinds/certificate/sync.js'
import {EndpointController} from './kinds/endpoint/sync.js'
import {HostController} from './kinds/host/sync.js'
import {K8sVolumeController} from './kinds/volume/sync.js'
import {K8sClusterReconciler} from './kinds/k8scluster/reconciler.js'
import {S3BucketReconciler} from './kinds/s3bucket/reconciler.js'
import {K8sAppPodStatusController} from './kinds/k8sapp/pod-status.js'
import {K8sAppController, K8sAppEndpointLinker} from './kinds/k8sapp/sync.js'

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
