import {Flags} from '@oclif/core'
import {JsonAwareCommand} from '../../cli/json-aware-command.js'
import {toMultiDocumentYaml} from '../../crds/render.js'
import {DEFAULT_NAMESPACE} from '../../operator/conventions.js'
import {operatorManifests} from '../../operator/manifests.js'
import {operatorVersion} from '../../version.js'

export default class Manifests extends JsonAwareCommand {
  static override summary = 'Print what runs the operator in a cluster: Namespace, ServiceAccount, RBAC, Deployment, Services, NetworkPolicy.'
  static override description =
    'The ClusterRole and Roles are generated from what the operator\'s controllers declare they read and write ' +
    '(no wildcards). The webhook Service selects the replica that holds the leader lease (its Pod label ' +
    'polycrate.io/leader), the metrics Service every replica. Apply the CRDs first (`polycrate operator crds | kubectl apply -f -`), then these. ' +
    '--dns01-webhook adds the cert-manager DNS01 webhook\'s APIService with a cert-manager-issued serving ' +
    'certificate; --vm-service-scrape adds a VictoriaMetrics VMServiceScrape for /metrics.'

  static override examples = [
    '<%= config.bin %> operator crds | kubectl apply -f - && <%= config.bin %> <%= command.id %> | kubectl apply -f -',
    '<%= config.bin %> <%= command.id %> --image registry.example.com/polycrate-operator:0.1.0 --namespace polycrate',
    '<%= config.bin %> <%= command.id %> --dns01-webhook --vm-service-scrape -o json',
  ]

  static override flags = {
    image: Flags.string({summary: 'Container image of the operator (its entrypoint must be `polycrate`).', default: `cargo.ayedo.cloud/ayedo/k8s/polycrate-operator:${operatorVersion()}`}),
    namespace: Flags.string({char: 'n', summary: 'Namespace the operator runs in (and its OperatorConfig lives in).', default: DEFAULT_NAMESPACE}),
    replicas: Flags.integer({summary: 'Replicas of the Deployment (they elect a leader).', default: 2, min: 1}),
    output: Flags.option({char: 'o', options: ['yaml', 'json'] as const, default: 'yaml', summary: 'Output format.'})(),
    'external-dns-webhook-port': Flags.integer({summary: 'external_dns_webhook.port of the OperatorConfig.', default: 8888, min: 1, max: 65535}),
    'dns01-webhook': Flags.boolean({summary: 'Add the cert-manager DNS01 webhook: APIService, serving certificate, RBAC for cert-manager.'}),
    'dns01-group-name': Flags.string({summary: 'dns01_webhook.group_name of the OperatorConfig.', default: 'webhook.dns.polycrate.io'}),
    'dns01-solver-name': Flags.string({summary: 'dns01_webhook.solver_name of the OperatorConfig.', default: 'polycrate'}),
    'dns01-port': Flags.integer({summary: 'dns01_webhook.port of the OperatorConfig.', default: 10250, min: 1, max: 65535}),
    'cert-manager-service-account': Flags.string({summary: 'namespace/name of cert-manager\'s ServiceAccount (it calls the DNS01 solver).', default: 'cert-manager/cert-manager'}),
    'vm-service-scrape': Flags.boolean({summary: 'Add a VictoriaMetrics VMServiceScrape for the metrics port.'}),
  }

  async run(): Promise<unknown> {
    const {flags} = await this.parse(Manifests)
    const [saNamespace, saName] = flags['cert-manager-service-account'].split('/')
    if (!saNamespace || !saName) this.error('--cert-manager-service-account must be namespace/name, e.g. cert-manager/cert-manager.', {exit: 2})
    const objects = operatorManifests({
      namespace: flags.namespace,
      image: flags.image,
      replicas: flags.replicas,
      externalDnsWebhookPort: flags['external-dns-webhook-port'],
      metricsPort: 8080,
      healthPort: 8081,
      dns01: flags['dns01-webhook']
        ? {groupName: flags['dns01-group-name'], solverName: flags['dns01-solver-name'], port: flags['dns01-port'], certManagerServiceAccount: {namespace: saNamespace, name: saName}}
        : undefined,
      vmServiceScrape: flags['vm-service-scrape'],
    })
    if (flags.output === 'json') this.log(JSON.stringify({apiVersion: 'v1', kind: 'List', items: objects}, null, 2))
    else process.stdout.write(toMultiDocumentYaml(objects))
    return undefined
  }
}
