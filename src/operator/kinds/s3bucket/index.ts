/**
 * The S3Bucket kind: S3Bucket CRs provisioned through the API.
 * Its only public name is `features`: the registry lists the kinds, each kind lists its features (in the order the
 * OperatorConfig status shows them). Everything else in this folder is the kind's own.
 */
import type {ApiSession} from '../../agent/api-session.js'
import type {OperatorConfig} from '../../config/operator-config.js'
import type {Feature} from '../../runtime/feature.js'
import {S3BucketReconciler} from './s3bucket.reconciler.js'

export function features(session: ApiSession): readonly Feature<OperatorConfig>[] {
  return [S3BucketReconciler(session)]
}
