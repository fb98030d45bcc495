/**
 * A feature's reported state (`status.controllers[]` of the OperatorConfig) and the reason words the FeatureSet,
 * the access review and readiness share.
 */

export interface ControllerState {
  name: string
  enabled: boolean
  running: boolean
  reason?: string
}

/** The reason of a feature that was started but could not run (FeatureSet): `Failed: <why>`. */
export const FAILED_PREFIX = 'Failed: '
/** The reason of a feature not started because the operator's RBAC lacks its rules (runtime/access-review.ts). */
export const FORBIDDEN_PREFIX = 'Forbidden: '

/** What installs the operator's own CRDs: named wherever one is missing. */
export const INSTALL_CRDS_HINT = 'install them with `polycrate operator install-crds` (or `polycrate operator crds | kubectl apply -f -`)'
