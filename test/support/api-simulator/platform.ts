/** Certificates (sync), S3 bucket credentials, DNS zone resolution and the SystemConfig of the API simulator. */
import {fieldError, forbidden, notFound, ok, validationError, type Reply} from './http.js'
import {modelFor, validateFields, type JsonObject} from './models.js'
import {type StoredObject} from './store.js'
import {isObject, text, SYSTEM_CONFIG_FOREIGN_KEYS, type Call} from './core.js'
import {AgentRoutes} from './agents.js'

export abstract class PlatformRoutes extends AgentRoutes {
  // ---------------------------------------------------------------------------------------------------------------
  // Certificates, S3, DNS, SystemConfig

  /**
   * Creates or updates the Certificate named by the raw cert-manager CR (name + namespace + cluster). Ids may be
   * strings or numbers (the SDK types them int although they are UUIDs elsewhere).
   */
  protected certificateSync(call: Call): Reply {
    const target = modelFor('certificates')
    const clusters = modelFor('kubernetes/clusters')
    if (!target || !clusters) throw new Error('certificate models missing')
    if (!this.allowed(call.principal, target, 'create')) return forbidden()
    const body = this.objectBody(call)
    if (!body.ok) return body.reply
    const sync = body.value
    const missing = ['cert_data', 'k8s_cluster_id', 'organization_id'].filter((field) => sync[field] === undefined || sync[field] === null)
    if (missing.length > 0) return validationError(missing.map((attr) => ({attr, code: 'required', detail: 'This field is required.'})))
    const cluster = this.findVisible(call, clusters, String(sync.k8s_cluster_id))
    if (!cluster) return fieldError('k8s_cluster_id', 'does_not_exist', `Invalid pk "${String(sync.k8s_cluster_id)}" - object does not exist.`)
    const cr = isObject(sync.cert_data) ? sync.cert_data : {}
    const metadata = isObject(cr.metadata) ? cr.metadata : {}
    const spec = isObject(cr.spec) ? cr.spec : {}
    const status = isObject(cr.status) ? cr.status : {}
    const name = text(metadata.name)
    const namespace = text(metadata.namespace)
    if (!name || !namespace) return fieldError('cert_data', 'invalid', 'cert_data needs metadata.name and metadata.namespace.')

    const issuer = isObject(spec.issuerRef) ? spec.issuerRef : {}
    const conditions = Array.isArray(status.conditions) ? status.conditions.filter(isObject) : []
    const ready = conditions.find((condition) => condition.type === 'Ready')
    const notAfter = text(status.notAfter)
    const expired = notAfter !== undefined && Date.parse(notAfter) < this.now()
    const fields: JsonObject = {
      name,
      namespace,
      k8s_cluster: cluster.id,
      secret_name: spec.secretName,
      dns_names: Array.isArray(spec.dnsNames) ? spec.dnsNames : [],
      ip_addresses: Array.isArray(spec.ipAddresses) ? spec.ipAddresses : [],
      issuer_name: issuer.name ?? null,
      issuer_kind: typeof issuer.kind === 'string' ? issuer.kind.toLowerCase() : null,
      issuer_group: issuer.group ?? null,
      not_before: status.notBefore ?? null,
      not_after: notAfter ?? null,
      renewal_time: status.renewalTime ?? null,
      is_ready: ready?.status === 'True',
      certificate_status: expired ? 'expired' : ready?.status === 'True' ? 'ready' : ready?.status === 'False' && ready.reason === 'Failed' ? 'failed' : 'pending',
      cert_manager_status: status,
      last_synced_from_cluster: this.isoNow(),
    }
    const existing = this.liveObjects('certificates').find(
      (certificate) => certificate.name === name && certificate.namespace === namespace && certificate.k8s_cluster === cluster.id,
    )
    const candidate: StoredObject = existing
      ? {...existing, ...fields, updated_at: this.isoNow()}
      : this.build('certificates', {...fields, kind: 'tls', workspace: cluster.workspace ?? null, organization: cluster.organization ?? null})
    const errors = validateFields(target, candidate)
    if (errors.length > 0) return validationError(errors)
    this.commit('certificates', candidate)
    return ok({
      cert_data: sync.cert_data,
      k8s_cluster_id: sync.k8s_cluster_id,
      organization_id: sync.organization_id,
      workspace_id: sync.workspace_id ?? null,
      certificate_id: candidate.id,
      created: !existing,
    })
  }

  /** Replaces a bucket's primary keys (as a key rotation in the dashboard does); false when there is no such bucket. */
  rotateS3Credentials(bucketId: string): boolean {
    const bucket = this.store.find('s3/buckets', bucketId)
    if (!bucket || !this.s3Credentials.has(bucketId)) return false
    const credential = this.s3.newCredential(bucket, this.isoNow())
    this.s3Credentials.set(bucketId, credential)
    bucket.credential = {id: credential.id, name: credential.name, api_user: credential.access_key}
    bucket.access_keys = [{id: credential.id, access_key: credential.access_key, primary: true}]
    return true
  }

  protected bucketCredentials(call: Call, id: string): Reply {
    const target = modelFor('s3/buckets')
    if (!target) throw new Error('s3/buckets model missing')
    const bucket = this.findVisible(call, target, id)
    if (!bucket) return notFound()
    const credential = this.s3.credentialsPending ? undefined : this.s3Credentials.get(bucket.id)
    return ok({
      success: true,
      data: {bucket_id: bucket.id, bucket_name: bucket.name, credentials: credential ? [structuredClone(credential)] : []},
      meta: {},
    })
  }

  /**
   * The longest zone the fqdn ends in, among internal zones first; only when no internal zone matches, among
   * external zones with primary_zone=true (how "prefers kind=internal, otherwise external" is read here).
   */
  protected resolveZone(call: Call): Reply {
    const zones = modelFor('domains/dnszones')
    if (!zones) throw new Error('dnszones model missing')
    const fqdn = call.url.searchParams.get('fqdn')?.trim().toLowerCase().replace(/\.$/, '')
    if (!fqdn) return fieldError('fqdn', 'required', 'This query parameter is required.')
    const candidates = this.liveObjects('domains/dnszones').filter(
      (zone) => zone.archived !== true && this.visible(call, zones, zone) && typeof zone.name === 'string' && (fqdn === zone.name || fqdn.endsWith(`.${zone.name}`)),
    )
    const longest = (list: StoredObject[]) => [...list].sort((a, b) => String(b.name).length - String(a.name).length)[0]
    const zone =
      longest(candidates.filter((candidate) => candidate.kind === 'internal')) ??
      longest(candidates.filter((candidate) => candidate.kind === 'external' && candidate.primary_zone !== false))
    return zone ? ok(this.zoneSimple(zone, call.base)) : notFound(`No DNS zone for "${fqdn}".`)
  }

  /** Platform admins only. A blank string clears a foreign-key field. */
  protected patchSystemConfig(call: Call): Reply {
    if (call.principal.kind !== 'platform-admin') return forbidden()
    const body = this.objectBody(call)
    if (!body.ok) return body.reply
    for (const [key, value] of Object.entries(body.value)) {
      this.systemConfig[key] = SYSTEM_CONFIG_FOREIGN_KEYS.has(key) && value === '' ? null : value
    }
    return ok({...this.systemConfig})
  }

}
