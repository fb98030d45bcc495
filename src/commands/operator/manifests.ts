import * as Flags from '@oclif/core/flags'
import {checkFlags, readValues} from '../../cli/install-view.js'
import {JsonAwareCommand} from '../../cli/json-aware-command.js'
import {toMultiDocumentYaml} from '../../crds/render.js'
import {operatorPermissions} from '../../operator/operator.js'
import {installPlan} from '../../operator/install/objects.js'
import {valuesManifests} from '../../operator/install/values-manifests.js'
import {postureOfPlan, postureWarnings} from '../../operator/install/posture.js'
import {defaultImage} from '../../operator/install/values.js'
import {DEFAULT_NAMESPACE} from '../../operator/conventions.js'

export default class Manifests extends JsonAwareCommand {
  static override summary = 'Print what runs the operator in a cluster: Namespace, ServiceAccount, RBAC, Deployment, Services, NetworkPolicy.'
  static override description =
    'The ClusterRole and Roles are generated from what the operator\'s controllers declare they read and write ' +
    '(no wildcards). The webhook Service and the metrics Service select every replica (the webhooks serve on each). ' +
    'Apply the CRDs first (`polycrate operator crds | kubectl apply -f -`), then these. ' +
    '--dns01-webhook adds the cert-manager DNS01 webhook\'s APIService with a cert-manager-issued serving ' +
    'certificate; --vm-service-scrape adds a VictoriaMetrics VMServiceScrape for /metrics.\n\n' +
    '--values FILE reads the operator block\'s `config:` (see `polycrate operator install --help`) and prints the same ' +
    'objects `install` applies: also the OperatorConfig, the image pull Secret (image_credentials) and the token ' +
    'Secret (api_sync.credentials.api_token) — the output then holds secrets — and a VMServiceScrape when ' +
    'metrics.enabled (the block default; --no-vm-service-scrape leaves it out), a VMRule with the alerting rules when ' +
    'metrics.alerts, a Grafana dashboard ConfigMap when metrics.dashboard. Flags override the values. ' +
    '--prometheus-rule adds the rules as a Prometheus operator PrometheusRule (install adds it where that CRD exists).\n\n' +
    'RBAC: the rules of the features the values enable (the OperatorConfig defaults without --values); ' +
    '--all-features grants those of every feature instead, for GitOps setups that enable features later (a feature ' +
    'enabled without its rules reports `Forbidden` in the OperatorConfig status and /readyz). With metrics.secure (the ' +
    'default) the output holds no serving certificate: the Deployment mounts the Secret polycrate-operator-metrics-tls ' +
    'if it exists (install makes it; with GitOps cert-manager can, see the README), else the operator serves /metrics ' +
    'with a self-signed certificate it makes at start. Posture warnings (e.g. the external-dns webhook open to every namespace) go to stderr.'

  static override examples = [
    '<%= config.bin %> operator crds | kubectl apply -f - && <%= config.bin %> <%= command.id %> | kubectl apply -f -',
    '<%= config.bin %> <%= command.id %> --image registry.example.com/polycrate:0.1.0 --namespace polycrate',
    '<%= config.bin %> <%= command.id %> --values workspace.poly --values secrets.poly | kubectl apply -f -',
    '<%= config.bin %> <%= command.id %> --dns01-webhook --vm-service-scrape -o json',
    '<%= config.bin %> <%= command.id %> --values values.yaml --prometheus-rule --no-vm-rule --dashboard',
  ]

  static override enableJsonFlag = true

  static override flags = {
    values: Flags.file({summary: 'The operator block\'s config: (or a block entry / workspace file with blocks:); repeatable, later files win.', multiple: true}),
    image: Flags.string({summary: `Container image of the operator (its entrypoint must be \`polycrate\`). Default: ${defaultImage()} (image_registry/image_name:image_tag of the values).`}),
    namespace: Flags.string({char: 'n', summary: `Namespace the operator runs in (and its OperatorConfig lives in). Default: ${DEFAULT_NAMESPACE} (namespace of the values).`}),
    replicas: Flags.integer({summary: 'Replicas of the Deployment (they elect a leader). Default: 1 (deployment.replicas of the values).', min: 1}),
    output: Flags.option({char: 'o', options: ['yaml', 'json'] as const, default: 'yaml', summary: 'yaml: one YAML document per object (for kubectl apply -f -); json: one List (--json is -o json).'})(),
    'allow-empty': Flags.boolean({summary: 'Accept a --values file that is empty or holds only comments (the block\'s defaults).'}),
    'external-dns-webhook-port': Flags.integer({summary: 'external_dns_webhook.port of the OperatorConfig (default 8888).', min: 1, max: 65535}),
    'dns01-webhook': Flags.boolean({summary: 'Add the cert-manager DNS01 webhook: APIService, serving certificate, RBAC for cert-manager (also with dns01_webhook.enabled in the values).'}),
    'dns01-group-name': Flags.string({summary: 'dns01_webhook.group_name of the OperatorConfig (default webhook.dns.polycrate.io).'}),
    'dns01-solver-name': Flags.string({summary: 'dns01_webhook.solver_name of the OperatorConfig (default polycrate).'}),
    'dns01-port': Flags.integer({summary: 'dns01_webhook.port of the OperatorConfig (default 10250).', min: 1, max: 65535}),
    'cert-manager-service-account': Flags.string({summary: 'namespace/name of cert-manager\'s ServiceAccount (it calls the DNS01 solver).', default: 'cert-manager/cert-manager'}),
    'vm-service-scrape': Flags.boolean({summary: 'Add a VictoriaMetrics VMServiceScrape for the metrics port (with --values: metrics.enabled decides unless given).', allowNo: true}),
    'vm-rule': Flags.boolean({summary: 'Add the alerting rules as a VictoriaMetrics VMRule (with --values: metrics.alerts decides unless given).', allowNo: true}),
    'prometheus-rule': Flags.boolean({summary: 'Add the alerting rules as a Prometheus operator PrometheusRule (default: no; the output cannot see whether the cluster has that CRD).', allowNo: true}),
    dashboard: Flags.boolean({summary: 'Add the Grafana dashboard as a ConfigMap labelled grafana_dashboard: "1" (with --values: metrics.dashboard decides unless given).', allowNo: true}),
    'all-features': Flags.boolean({summary: 'RBAC for every feature, not only those the values enable (for enabling features later without install).'}),
  }

  /** -o yaml is the objects as YAML documents, not the List --json prints. */
  protected override yamlIsText(): boolean {
    return true
  }

  async run(): Promise<unknown> {
    const {flags} = await this.parse(Manifests)
    const [saNamespace, saName] = flags['cert-manager-service-account'].split('/')
    if (!saNamespace || !saName) this.error('--cert-manager-service-account must be namespace/name, e.g. cert-manager/cert-manager.', {exit: 2})
    checkFlags({namespace: flags.namespace, image: flags.image, replicas: flags.replicas}, (message) => this.error(message, {exit: 2}))
    const values = readValues(flags.values, (message) => this.error(message, {exit: 2}), {allowEmpty: flags['allow-empty']})
    const spec = values.effectiveSpec
    const dns01 = flags['dns01-webhook'] || spec.dns01_webhook.enabled
      ? {
        groupName: flags['dns01-group-name'] ?? spec.dns01_webhook.group_name,
        solverName: flags['dns01-solver-name'] ?? spec.dns01_webhook.solver_name,
        port: flags['dns01-port'] ?? spec.dns01_webhook.port,
        certManagerServiceAccount: {namespace: saNamespace!, name: saName!},
      }
      : undefined
    // --dns01-webhook turns the webhook on for the RBAC too.
    const enabled = dns01 ? {...spec, dns01_webhook: {...spec.dns01_webhook, enabled: true}} : spec
    const permissions = operatorPermissions(flags['all-features'] ? undefined : enabled)
    const planOptions = {
      image: flags.image,
      namespace: flags.namespace,
      overrides: {
        dns01,
        ...(flags.replicas === undefined ? {} : {replicas: flags.replicas}),
        ...(flags['external-dns-webhook-port'] === undefined ? {} : {externalDnsWebhookPort: flags['external-dns-webhook-port']}),
      },
    }
    let objects
    let plan
    if (flags.values) {
      const rendered = valuesManifests(values, {
        ...planOptions, permissions,
        vmServiceScrape: flags['vm-service-scrape'], vmRule: flags['vm-rule'], prometheusRule: flags['prometheus-rule'], dashboard: flags.dashboard,
      })
      objects = rendered.objects
      plan = rendered.plan
      const secrets = [rendered.plan.tokenSecret, rendered.plan.pullSecret].filter((secret) => secret !== undefined).map((secret) => secret.metadata!.name)
      // On stderr also with -o json (logToStderr would say nothing then).
      if (secrets.length > 0) process.stderr.write(`Note: the output holds the Secret${secrets.length > 1 ? 's' : ''} ${secrets.join(', ')} with credentials from the values; do not commit or share it.\n`)
    } else {
      plan = installPlan(values, permissions, planOptions)
      objects = [
        plan.namespaceObject, ...plan.workload,
        ...(flags['vm-service-scrape'] ? [plan.vmServiceScrape] : []),
        ...(flags['vm-rule'] ? [plan.monitoring.vmRule] : []),
        ...(flags['prometheus-rule'] ? [plan.monitoring.prometheusRule] : []),
        ...(flags.dashboard ? [plan.monitoring.dashboard] : []),
      ]
    }
    // On stderr also with -o json (logToStderr would say nothing then).
    for (const warning of postureWarnings(postureOfPlan(plan))) process.stderr.write(`Warning: ${warning}\n`)
    const list = {apiVersion: 'v1', kind: 'List', items: objects}
    if (this.jsonEnabled()) return list
    process.stdout.write(toMultiDocumentYaml(objects))
    return undefined
  }
}
