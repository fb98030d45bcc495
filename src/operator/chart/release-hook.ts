/**
 * The chart's pre-delete hook (pure): before `helm uninstall` deletes the objects, a Job runs the operator's image as
 * `polycrate operator uninstall --release-only` — the operator scaled to 0 and every finalizer it put on users'
 * objects and on the polycrate.io objects released — under a ServiceAccount with exactly those rights
 * (`releasePermissions`). Helm deletes the hook's objects once it succeeded. The image, its pull Secret and the
 * security contexts are the operator Deployment's.
 */
import type {KubeObject} from '../../kube/client.js'
import {OPERATOR_NAME} from '../conventions.js'
import {roleRules} from '../permissions.js'
import {releasePermissions} from '../install/uninstall.js'

export const RELEASE_HOOK_NAME = `${OPERATOR_NAME}-release`
/** Seconds the hook's uninstall step waits for the operator's Pods to go. */
export const RELEASE_TIMEOUT_SECONDS = 240

interface PodTemplate {
  spec: {
    imagePullSecrets?: Array<{name: string}>
    securityContext?: Record<string, unknown>
    containers: Array<{image: string; securityContext?: {capabilities?: Record<string, unknown>} & Record<string, unknown>}>
  }
}

/** The hook's objects for the operator Deployment `deployment` (from the same values). */
export function releaseHookObjects(deployment: KubeObject): KubeObject[] {
  const namespace = deployment.metadata!.namespace!
  const pod = (deployment as KubeObject & {spec: {template: PodTemplate}}).spec.template
  const operator = pod.spec.containers[0]!
  const name = RELEASE_HOOK_NAME
  const labels = {'app.kubernetes.io/name': name, 'app.kubernetes.io/part-of': 'polycrate', 'app.kubernetes.io/component': 'helm-pre-delete-hook'}
  const hook = (weight: number) => ({
    'helm.sh/hook': 'pre-delete',
    'helm.sh/hook-weight': String(weight),
    'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
  })
  const meta = (weight: number, objectNamespace?: string) => ({name, ...(objectNamespace ? {namespace: objectNamespace} : {}), labels, annotations: hook(weight)})
  const roles = roleRules(releasePermissions())
  const subject = {kind: 'ServiceAccount', name, namespace}
  const objects: KubeObject[] = [
    {apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(-10, namespace)} as KubeObject,
    {apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(-10), rules: roles.cluster} as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: meta(-5),
      roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name}, subjects: [subject],
    } as KubeObject,
  ]
  for (const [roleNamespace, rules] of roles.namespaced) {
    const where = roleNamespace || namespace
    objects.push(
      {apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: meta(-10, where), rules} as KubeObject,
      {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: meta(-5, where),
        roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name}, subjects: [subject],
      } as KubeObject,
    )
  }
  const {add: _add, ...capabilities} = operator.securityContext?.capabilities ?? {}
  objects.push({
    apiVersion: 'batch/v1', kind: 'Job', metadata: meta(0, namespace),
    spec: {
      backoffLimit: 2,
      activeDeadlineSeconds: RELEASE_TIMEOUT_SECONDS + 120,
      template: {
        metadata: {labels},
        spec: {
          serviceAccountName: name,
          restartPolicy: 'Never',
          ...(pod.spec.imagePullSecrets ? {imagePullSecrets: pod.spec.imagePullSecrets} : {}),
          ...(pod.spec.securityContext ? {securityContext: pod.spec.securityContext} : {}),
          containers: [{
            name: 'release',
            image: operator.image,
            command: ['polycrate'],
            args: ['operator', 'uninstall', '--release-only', '--yes', '--namespace', namespace, '--timeout', String(RELEASE_TIMEOUT_SECONDS)],
            resources: {requests: {cpu: '50m', memory: '128Mi'}, limits: {cpu: '1000m', memory: '512Mi'}},
            securityContext: {...operator.securityContext, capabilities},
            volumeMounts: [{name: 'tmp', mountPath: '/tmp'}],
          }],
          volumes: [{name: 'tmp', emptyDir: {}}],
        },
      },
    },
  } as KubeObject)
  return objects
}
