/**
 * Whether the operator's RBAC covers a feature before it starts. `install` grants the rules of the features its
 * values enable (manifests.ts); a feature enabled later in the OperatorConfig (kubectl edit, GitOps) may lack them.
 * Instead of a controller that fails with 403s in a loop, the feature is not started and says so: `Forbidden: …` in
 * the OperatorConfig status, its condition and /readyz, with what to do. Nothing else stops.
 *
 * One SelfSubjectAccessReview per verb, resource and namespace the feature's permissions name (the API any
 * authenticated identity may call, as `kubectl auth can-i` does), deduplicated, a few at a time. A review that cannot be
 * made (the apiserver unreachable, an authorizer that errs) does not stop the feature: its own requests will tell.
 */
import {FORBIDDEN_PREFIX} from './feature-state.js'
import type {Permission, Verb} from '../permissions.js'

/** One question: may the operator `verb` this resource (where, which one)? */
export interface AccessCheck {
  group: string
  resource: string
  subresource?: string
  verb: Verb
  /** Absent: cluster-wide (every namespace, or a cluster-scoped resource). */
  namespace?: string
  name?: string
}

/** The checks a feature's permissions stand for (pure): one per verb (and per name where they are named). */
export function accessChecks(permissions: readonly Permission[], operatorNamespace: string): AccessCheck[] {
  const checks = new Map<string, AccessCheck>()
  for (const permission of permissions) {
    const [resource, subresource] = permission.resource.split('/') as [string, string | undefined]
    const namespace = permission.namespace ?? (permission.scope === 'namespace' ? operatorNamespace : undefined)
    for (const verb of permission.verbs) {
      for (const name of permission.names ?? [undefined]) {
        const check: AccessCheck = {group: permission.group, resource, verb, ...(subresource ? {subresource} : {}), ...(namespace ? {namespace} : {}), ...(name ? {name} : {})}
        checks.set(checkKey(check), check)
      }
    }
  }
  return [...checks.values()]
}

export const checkKey = (check: AccessCheck) => JSON.stringify([check.group, check.resource, check.subresource ?? '', check.verb, check.namespace ?? '', check.name ?? ''])

/** `create secrets (every namespace)`, `get configmaps kube-system/extension-apiserver-authentication` (pure). */
export function describeCheck(check: AccessCheck): string {
  const resource = `${check.resource}${check.subresource ? `/${check.subresource}` : ''}${check.group ? `.${check.group}` : ''}`
  const where = check.namespace ? `in ${check.namespace}` : 'cluster-wide'
  return `${check.verb} ${resource}${check.name ? ` ${check.name}` : ''} ${where}`
}

export const FORBIDDEN_HINT = 'the installed RBAC lacks this feature\'s rules: run `polycrate operator install` again with it enabled in the values (or apply `polycrate operator manifests --all-features`)'

/** The reason a feature without its rules reports (pure). */
export function forbiddenReason(denied: readonly AccessCheck[]): string {
  const shown = denied.slice(0, 3).map(describeCheck)
  const more = denied.length > shown.length ? ` and ${denied.length - shown.length} more` : ''
  return `${FORBIDDEN_PREFIX}the operator may not ${shown.join(', ')}${more}; ${FORBIDDEN_HINT}`
}

/** Creates SelfSubjectAccessReviews (KubeClient.create). */
export interface ReviewClient {
  create(ref: {group: string; version: string; plural: string}, body: object): Promise<unknown>
}

interface SelfSubjectAccessReview {
  status?: {allowed?: boolean}
}

const REVIEWS = {group: 'authorization.k8s.io', version: 'v1', plural: 'selfsubjectaccessreviews'}
const CONCURRENT_REVIEWS = 8

/**
 * Asks the apiserver, a few reviews at a time. Answers are not cached: RBAC changes while the operator runs (install
 * again), and a feature asks only when it starts.
 */
export class SelfAccessReviewer {
  readonly reviews = {sent: 0}
  constructor(private readonly client: ReviewClient) {}

  /**
   * Starts the reviews of `checks` in their order, a few at a time: each check's answer (true: allowed; a review
   * that fails counts as allowed, see the module comment) by checkKey, settled as soon as it is in, so that whoever
   * needs the first checks need not wait for the last. The checks are distinct (FeatureSet asks each once).
   */
  review(checks: readonly AccessCheck[]): ReadonlyMap<string, Promise<boolean>> {
    const answer: Array<(allowed: boolean) => void> = []
    const answers = new Map(checks.map((check, i) => [checkKey(check), new Promise<boolean>((resolve) => (answer[i] = resolve))]))
    let next = 0
    const worker = async () => {
      while (next < checks.length) {
        const i = next++
        answer[i]!(await this.allowed(checks[i]!))
      }
    }
    for (let i = 0; i < Math.min(CONCURRENT_REVIEWS, checks.length); i++) void worker()
    return answers
  }

  private async allowed(check: AccessCheck): Promise<boolean> {
    this.reviews.sent++
    try {
      const review = await this.client.create(REVIEWS, {
        apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview',
        spec: {resourceAttributes: {group: check.group, resource: check.resource, subresource: check.subresource, verb: check.verb, namespace: check.namespace, name: check.name}},
      }) as SelfSubjectAccessReview
      return review.status?.allowed === true
    } catch {
      return true
    }
  }
}
