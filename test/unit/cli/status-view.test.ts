/**
 * `polycrate operator status` without a cluster: rows, ages, sections and summaries (src/cli/status-view.ts), and
 * the listing (src/kube/resources-inventory.ts) against a fake client — paging, bounded concurrency, missing CRDs.
 */
import assert from 'node:assert/strict'
import {endpointCrd} from '../../../src/crds/endpoint.js'
import {allCrds, findCrd} from '../../../src/crds/index.js'
import type {CrdDefinition} from '../../../src/crds/define.js'
import {KubeApiError, KubeConnectionError, type RequestOptions} from '../../../src/kube/client.js'
import {
  collectInventory,
  CrdsMissingError,
  listAllPages,
  listPath,
  type InventoryObject,
  type ListingClient,
} from '../../../src/kube/resources-inventory.js'
import {
  columnCell,
  columnValue,
  columnValues,
  CRDS_MISSING,
  formatAge,
  missingKindsWarning,
  noOperatorConfig,
  NO_RESOURCES,
  operatorConfigDocument,
  readJsonPath,
  renderKindSection,
  renderOperatorConfig,
  renderStatus,
  resourceRow,
  selectKinds,
  statusColumns,
  statusReport,
  syncFields,
  unknownKindMessage,
  usesCamelCaseStatus,
  type ResourceRow,
} from '../../../src/cli/status-view.js'

const NOW = Date.parse('2026-05-04T10:00:00.000Z')
const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
const ago = (ms: number) => new Date(NOW - ms).toISOString()

const kind = (name: string): CrdDefinition => {
  const def = findCrd(name)
  assert.ok(def, name)
  return def
}

function object(namespace: string | undefined, name: string, status?: unknown, age = 5 * MINUTE, spec: unknown = {}): InventoryObject {
  return {
    apiVersion: 'polycrate.io/v1alpha1',
    metadata: {name, ...(namespace ? {namespace} : {}), creationTimestamp: ago(age)},
    spec,
    ...(status === undefined ? {} : {status}),
  }
}

describe('status view', () => {
  describe('formatAge (kubectl ShortHumanDuration)', () => {
    const cases: Array<[string, string | undefined, string]> = [
      ['now', ago(0), '0s'],
      ['45 seconds', ago(45 * SECOND), '45s'],
      ['59.9 seconds', ago(59.9 * SECOND), '59s'],
      ['one minute', ago(MINUTE), '1m'],
      ['3 min 59 s', ago(3 * MINUTE + 59 * SECOND), '3m'],
      ['59 minutes', ago(59 * MINUTE), '59m'],
      ['one hour', ago(HOUR), '1h'],
      ['5 h 30 m', ago(5.5 * HOUR), '5h'],
      ['23 h 59 m', ago(24 * HOUR - MINUTE), '23h'],
      ['one day', ago(DAY), '1d'],
      ['7 days', ago(7 * DAY + 3 * HOUR), '7d'],
      ['364 days', ago(364 * DAY), '364d'],
      ['one year', ago(365 * DAY), '1y'],
      ['800 days', ago(800 * DAY), '2y'],
      ['half a second ahead (skew)', ago(-500), '0s'],
      ['5 s ahead', ago(-5 * SECOND), '<invalid>'],
      ['no timestamp', undefined, '<unknown>'],
      ['garbage', 'yesterday', '<unknown>'],
    ]
    for (const [title, timestamp, expected] of cases) {
      it(`${title} → ${expected}`, () => assert.equal(formatAge(timestamp, NOW), expected))
    }
  })

  describe('syncFields: both spellings, the kind\'s own first', () => {
    it('Endpoint and K8sCluster are camelCase kinds, the others snake_case', () => {
      assert.deepEqual(allCrds.filter(usesCamelCaseStatus).map((def) => def.kind).sort(), ['Endpoint', 'K8sCluster'])
    })

    const cases: Array<[string, string, unknown, {phase: string | null; syncStatus: string | null; apiID: string | null}]> = [
      ['Endpoint, camelCase', 'Endpoint', {phase: 'Synced', syncStatus: 'synced', apiID: 'ep-1'},
        {phase: 'Synced', syncStatus: 'synced', apiID: 'ep-1'}],
      ['K8sCluster, camelCase', 'K8sCluster', {phase: 'Ready', syncStatus: 'synced', apiID: 'c-1'},
        {phase: 'Ready', syncStatus: 'synced', apiID: 'c-1'}],
      ['K8sApp, snake_case', 'K8sApp', {phase: 'Synced', sync_status: 'synced', api_id: 'app-1'},
        {phase: 'Synced', syncStatus: 'synced', apiID: 'app-1'}],
      ['Certificate, snake_case', 'Certificate', {phase: 'Error', sync_status: 'error', api_id: 'cert-1'},
        {phase: 'Error', syncStatus: 'error', apiID: 'cert-1'}],
      ['Endpoint written in snake_case still shows', 'Endpoint', {sync_status: 'pending', api_id: 'ep-2'},
        {phase: null, syncStatus: 'pending', apiID: 'ep-2'}],
      ['K8sApp written in camelCase still shows', 'K8sApp', {phase: 'Pending', syncStatus: 'pending', apiID: 'app-2'},
        {phase: 'Pending', syncStatus: 'pending', apiID: 'app-2'}],
      ['both spellings on Endpoint: camelCase wins', 'Endpoint', {apiID: 'camel', api_id: 'snake'},
        {phase: null, syncStatus: null, apiID: 'camel'}],
      ['both spellings on Host: snake_case wins', 'Host', {apiID: 'camel', api_id: 'snake'},
        {phase: null, syncStatus: null, apiID: 'snake'}],
      ['no status', 'Host', undefined, {phase: null, syncStatus: null, apiID: null}],
      ['empty strings and objects are no value', 'Backup', {phase: '', api_id: {}, sync_status: 7},
        {phase: null, syncStatus: '7', apiID: null}],
    ]
    for (const [title, kindName, status, expected] of cases) {
      it(title, () => assert.deepEqual(syncFields(kind(kindName), status), expected))
    }
  })

  describe('the kind\'s own columns', () => {
    describe('readJsonPath: only the .a.b.c form', () => {
      const doc = {
        spec: {host: 'a.example.com', port: 443, tls: false, empty: '', none: null, list: ['a', 'b'], block: {name: 'web', meta: {v: '1'}}},
        status: {phase: 'Ready'},
      }
      const cases: Array<[string, unknown, string, unknown]> = [
        ['a field', doc, '.spec.host', 'a.example.com'],
        ['a number', doc, '.spec.port', 443],
        ['false is a value', doc, '.spec.tls', false],
        ['"" as it is', doc, '.spec.empty', ''],
        ['null as it is', doc, '.spec.none', null],
        ['an array', doc, '.spec.list', ['a', 'b']],
        ['nested', doc, '.spec.block.name', 'web'],
        ['three deep', doc, '.spec.block.meta.v', '1'],
        ['an object', doc, '.status', {phase: 'Ready'}],
        ['snake_case and dashes in names', {spec: {pod_count: 2, 'a-b': 3}}, '.spec.pod_count', 2],
        ['a missing field', doc, '.spec.path', undefined],
        ['below a missing field', doc, '.spec.source.name', undefined],
        ['below a string', doc, '.spec.host.length', undefined],
        ['below null', doc, '.spec.none.x', undefined],
        ['into an array by name', doc, '.spec.list.length', undefined],
        ['inherited properties are no fields', doc, '.spec.toString', undefined],
        ['no object at all', undefined, '.spec', undefined],
        ['an index', doc, '.spec.list[0]', undefined],
        ['braces', doc, '{.spec.host}', undefined],
        ['recursive descent', doc, '..host', undefined],
        ['no leading dot', doc, 'spec.host', undefined],
        ['a trailing dot', doc, '.spec.', undefined],
        ['the root', doc, '.', undefined],
        ['empty', doc, '', undefined],
        ['a filter', doc, '.spec[?(@.host)]', undefined],
        ['an escaped dot', {metadata: {labels: {'a.b': 'x'}}}, '.metadata.labels.a\\.b', undefined],
      ]
      for (const [title, value, path, expected] of cases) {
        it(`${title}: ${JSON.stringify(path)}`, () => assert.deepEqual(readJsonPath(value, path), expected))
      }
    })

    describe('columnValue', () => {
      const cases: Array<[string, unknown, string | null]> = [
        ['a string', 'velero', 'velero'],
        ['a number', 8080, '8080'],
        ['zero', 0, '0'],
        ['true', true, 'true'],
        ['false', false, 'false'],
        ['an array joined with ","', ['a.example.com', 'b.example.com', 3, true], 'a.example.com,b.example.com,3,true'],
        ['objects in an array as JSON', [{name: 'web'}], '{"name":"web"}'],
        ['an object as JSON', {a: 1}, '{"a":1}'],
        ['absent', undefined, null],
        ['null', null, null],
        ['""', '', null],
        ['[]', [], null],
      ]
      for (const [title, value, expected] of cases) {
        it(`${title} → ${JSON.stringify(expected)}`, () => assert.equal(columnValue(value), expected))
      }
    })

    describe('columnCell', () => {
      const date = {name: 'Completed', type: 'date', jsonPath: '.spec.completed_at'} as const
      const string = {name: 'Provider', type: 'string', jsonPath: '.spec.provider'} as const
      const cases: Array<[string, typeof date | typeof string, string | null | undefined, string]> = [
        ['a date as its age', date, ago(3 * DAY + HOUR), '3d'],
        ['a date a second old', date, ago(SECOND), '1s'],
        ['a date column with no timestamp in it shows the text', date, 'soon', 'soon'],
        ['a string as it is', string, '2026-05-01T00:00:00Z', '2026-05-01T00:00:00Z'],
        ['null', date, null, '-'],
        ['absent', string, undefined, '-'],
      ]
      for (const [title, column, value, expected] of cases) {
        it(`${title} → ${expected}`, () => assert.equal(columnCell(column, value, NOW), expected))
      }
    })

    it('the priority-0 printer columns but Phase, Sync and API ID, in order, for every kind', () => {
      const columns = Object.fromEntries(allCrds.map((def) => [def.kind, statusColumns(def).map((column) => column.name)]))
      assert.deepEqual(columns, {
        OperatorConfig: ['API Sync', 'Workspace'],
        K8sCluster: ['API Server', 'Version'],
        Endpoint: ['Host', 'Port', 'Path'],
        K8sApp: ['Block', 'Version', 'Artifacts'],
        Host: ['Hostname', 'IPv4', 'Role', 'CPU'],
        K8sVolume: ['Capacity', 'Storage Class', 'Claim', 'PV Phase'],
        S3Bucket: ['Bucket', 'Region', 'Secret'],
        Organization: ['Display Name', 'Slug'],
        Artifact: ['Registry', 'Repository', 'Tag', 'Pods'],
        Backup: ['Provider', 'Kind', 'Status', 'Completed'],
        BackupSchedule: ['Provider', 'Schedule', 'Paused', 'Last Backup'],
        Certificate: ['Issuer', 'Ready', 'Status'],
      })
    })

    it('every kind\'s printer columns are of the .a.b.c form, so status can read them', () => {
      for (const def of allCrds) {
        for (const column of def.printerColumns) assert.match(column.jsonPath, /^(\.[A-Za-z0-9_-]+)+$/, `${def.kind} ${column.name}`)
      }
    })

    it('columnValues: by printer column name, null when absent', () => {
      assert.deepEqual(columnValues(kind('K8sApp'), object('prod', 'web', {artifact_count: 4}, MINUTE, {block: {name: 'nginx', version: '1.2.0'}})),
        {Block: 'nginx', Version: '1.2.0', Artifacts: '4'})
      assert.deepEqual(columnValues(kind('Host'), {metadata: {name: 'node-1'}}), {Hostname: null, IPv4: null, Role: null, CPU: null})
    })
  })

  describe('resourceRow', () => {
    it('a namespaced object: namespace, name, the kind\'s columns, age and the raw creationTimestamp', () => {
      const item = object('prod', 'app-example-com', {phase: 'Synced', syncStatus: 'synced', apiID: 'ep-1'}, 3 * HOUR,
        {remoteAddress: 'app.example.com', remotePort: 443})
      assert.deepEqual(resourceRow(endpointCrd, item, NOW), {
        kind: 'Endpoint', namespace: 'prod', name: 'app-example-com',
        columns: {Host: 'app.example.com', Port: '443', Path: null},
        phase: 'Synced', syncStatus: 'synced', apiID: 'ep-1', age: '3h', creationTimestamp: ago(3 * HOUR),
      })
    })
    it('date columns keep the raw timestamp; booleans and numbers as text', () => {
      const completed = ago(3 * DAY)
      assert.deepEqual(resourceRow(kind('Backup'), object('velero', 'daily', {}, DAY, {provider: 'velero', completed_at: completed}), NOW).columns,
        {Provider: 'velero', Kind: null, Status: null, Completed: completed})
      assert.deepEqual(resourceRow(kind('Certificate'), object('prod', 'tls', {}, DAY, {is_ready: false}), NOW).columns,
        {Issuer: null, Ready: 'false', Status: null})
    })
    it('the cluster-scoped Artifact has namespace null', () => {
      const row = resourceRow(kind('Artifact'), object(undefined, 'nginx-1-25', {phase: 'Synced'}), NOW)
      assert.equal(row.namespace, null)
      assert.equal(row.kind, 'Artifact')
    })
    it('no creationTimestamp: age <unknown>, creationTimestamp null', () => {
      const row = resourceRow(kind('Host'), {metadata: {name: 'node-1', namespace: 'x'}}, NOW)
      assert.equal(row.age, '<unknown>')
      assert.equal(row.creationTimestamp, null)
    })
  })

  describe('selectKinds', () => {
    const kinds = (names?: string[], namespace?: string) => {
      const selection = selectKinds(names, namespace)
      return selection.kinds?.map((def) => def.kind) ?? `unknown ${selection.unknown}`
    }
    const cases: Array<[string, string[] | undefined, string | undefined, string[] | string]> = [
      ['every kind by default', undefined, undefined, allCrds.map((def) => def.kind)],
      ['with a namespace: no cluster-scoped kinds', undefined, 'prod', allCrds.filter((d) => d.kind !== 'Artifact').map((d) => d.kind)],
      ['short names, plurals, kinds, any case; in allCrds order; no duplicates', ['APP', 'ep', 'endpoints', 'OperatorConfig'], undefined,
        ['OperatorConfig', 'Endpoint', 'K8sApp']],
      ['Artifact asked for by name with a namespace stays', ['artifacts'], 'prod', ['Artifact']],
      ['unknown kind', ['ep', 'pods'], undefined, 'unknown pods'],
    ]
    for (const [title, names, namespace, expected] of cases) {
      it(title, () => assert.deepEqual(kinds(names, namespace), expected))
    }
    it('the unknown-kind message lists every valid kind with plural and short names', () => {
      const message = unknownKindMessage('pods')
      assert.match(message, /^Unknown kind "pods"\. Valid kinds: OperatorConfig \(operatorconfigs, oc, opcfg\); /)
      for (const def of allCrds) assert.ok(message.includes(`${def.kind} (${def.plural}`), def.kind)
    })
  })

  describe('sections', () => {
    const rows: ResourceRow[] = [
      resourceRow(endpointCrd, object('prod', 'app-example-com', {phase: 'Synced', syncStatus: 'synced', apiID: 'ep-1'}, 3 * DAY,
        {remoteAddress: 'app.example.com', remotePort: 443, path: '/healthz'}), NOW),
      resourceRow(endpointCrd, object('dev', 'dev-example-com', {phase: 'Pending'}, 45 * SECOND, {remoteAddress: 'dev.example.com'}), NOW),
      resourceRow(endpointCrd, object('prod', 'broken-example-com', {phase: 'Error', syncStatus: 'error'}, 2 * HOUR), NOW),
    ]

    it('a namespaced kind: heading, underline, table with NAMESPACE and the kind\'s columns; "-" for missing values', () => {
      assert.equal(renderKindSection(endpointCrd, rows, {now: NOW}), [
        'Endpoints',
        '---------',
        '  NAMESPACE   NAME                 HOST              PORT   PATH       PHASE     SYNC     API ID   AGE',
        '  prod        app-example-com      app.example.com   443    /healthz   Synced    synced   ep-1     3d',
        '  dev         dev-example-com      dev.example.com   -      -          Pending   -        -        45s',
        '  prod        broken-example-com   -                 -      -          Error     error    -        2h',
      ].join('\n'))
    })

    it('the cluster-scoped Artifact has no NAMESPACE column; its columns are Registry, Repository, Tag, Pods', () => {
      const artifact = kind('Artifact')
      const rows = [
        resourceRow(artifact, object(undefined, 'nginx', {phase: 'Synced', api_id: 'a-1'}, 10 * MINUTE,
          {image: 'docker.io/library/nginx:1.25.3', registry: 'docker.io', repository: 'library/nginx', tag: '1.25.3', usage: {pod_count: 3}}), NOW),
        resourceRow(artifact, object(undefined, 'redis', {phase: 'Pending'}, 2 * DAY, {image: 'redis', usage: {pod_count: 0}}), NOW),
      ]
      assert.equal(rows[0]!.namespace, null)
      assert.deepEqual(rows[1]!.columns, {Registry: null, Repository: null, Tag: null, Pods: '0'})
      assert.equal(renderKindSection(artifact, rows, {now: NOW}), [
        'Artifacts',
        '---------',
        '  NAME    REGISTRY    REPOSITORY      TAG      PODS   PHASE     SYNC   API ID   AGE',
        '  nginx   docker.io   library/nginx   1.25.3   3      Synced    -      a-1      10m',
        '  redis   -           -               -        0      Pending   -      -        2d',
      ].join('\n'))
    })

    it('Certificate: Issuer, Ready, Status; its Sync column is SYNC, Not After (wide only) is left out', () => {
      const certificate = kind('Certificate')
      const rows = [
        resourceRow(certificate, object('prod', 'app-tls', {phase: 'Synced', sync_status: 'synced', api_id: 'cert-1'}, 20 * DAY,
          {name: 'app-tls', secret_name: 'app-tls', issuer_name: 'letsencrypt', is_ready: true, certificate_status: 'ready', not_after: ago(-60 * DAY)}), NOW),
        resourceRow(certificate, object('prod', 'api-tls', {phase: 'Pending', sync_status: 'pending'}, 5 * MINUTE,
          {name: 'api-tls', secret_name: 'api-tls', issuer_name: 'letsencrypt', is_ready: false, certificate_status: 'pending'}), NOW),
        resourceRow(certificate, object('dev', 'new-tls', undefined, 30 * SECOND, {name: 'new-tls', secret_name: 'new-tls'}), NOW),
      ]
      assert.equal(renderKindSection(certificate, rows, {now: NOW}), [
        'Certificates',
        '------------',
        '  NAMESPACE   NAME      ISSUER        READY   STATUS    PHASE     SYNC      API ID   AGE',
        '  prod        app-tls   letsencrypt   true    ready     Synced    synced    cert-1   20d',
        '  prod        api-tls   letsencrypt   false   pending   Pending   pending   -        5m',
        '  dev         new-tls   -             -       -         -         -         -        30s',
      ].join('\n'))
    })

    it('Backup: Provider, Kind, Status, Completed (an age like AGE)', () => {
      const backup = kind('Backup')
      const rows = [
        resourceRow(backup, object('velero', 'daily-20260501', {phase: 'Synced', sync_status: 'synced', api_id: 'b-1'}, 3 * DAY,
          {name: 'daily-20260501', provider: 'velero', kind: 'cluster', status: 'completed', completed_at: ago(3 * DAY - 20 * MINUTE)}), NOW),
        resourceRow(backup, object('db', 'pg-base', {phase: 'Pending'}, 90 * SECOND,
          {name: 'pg-base', provider: 'cloudnativepg', kind: 'database', status: 'running'}), NOW),
      ]
      assert.equal(rows[0]!.columns.Completed, ago(3 * DAY - 20 * MINUTE), 'the raw timestamp in the row')
      assert.equal(renderKindSection(backup, rows, {now: NOW}), [
        'Backups',
        '-------',
        '  NAMESPACE   NAME             PROVIDER        KIND       STATUS      COMPLETED   PHASE     SYNC     API ID   AGE',
        '  velero      daily-20260501   velero          cluster    completed   2d          Synced    synced   b-1      3d',
        '  db          pg-base          cloudnativepg   database   running     -           Pending   -        -        1m',
      ].join('\n'))
    })

    it('no escape codes without colour; with colour Ready/Synced green, Error/Failed red, Pending yellow', () => {
      // eslint-disable-next-line no-control-regex
      assert.doesNotMatch(renderKindSection(endpointCrd, rows, {now: NOW, colour: false}), /\x1b\[/)
      const coloured = renderKindSection(endpointCrd, rows, {now: NOW, colour: true})
      assert.ok(coloured.includes('\x1b[32mSynced\x1b[39m'), 'Synced green')
      assert.ok(coloured.includes('\x1b[32msynced\x1b[39m'), 'synced green')
      assert.ok(coloured.includes('\x1b[31mError\x1b[39m'), 'Error red')
      assert.ok(coloured.includes('\x1b[33mPending\x1b[39m'), 'Pending yellow')
      assert.ok(!coloured.includes('\x1b[33m-'), 'no colour on "-"')
      // the table still lines up: columns are measured without the escape codes
      // eslint-disable-next-line no-control-regex
      assert.equal(coloured.replace(/\x1b\[\d+m/g, ''), renderKindSection(endpointCrd, rows, {now: NOW}))
    })
  })

  describe('OperatorConfig summary', () => {
    const config = operatorConfigDocument({
      apiVersion: 'polycrate.io/v1alpha1',
      kind: 'OperatorConfig',
      metadata: {name: 'default', namespace: 'polycrate', managedFields: [{manager: 'x'}], creationTimestamp: ago(DAY)},
      spec: {api_sync: {enabled: true}, local_cluster: {enabled: true}},
      status: {
        phase: 'Ready',
        conditions: [
          {type: 'Ready', status: 'True', reason: 'Configured', message: 'configuration is valid'},
          {type: 'ApiReachable', status: 'False', reason: 'Unauthorized', message: 'the agent token was rejected'},
        ],
        api_sync: {workspace_name: 'acme-prod', organization_name: 'Acme', resolved_at: ago(3 * MINUTE)},
        local_cluster: {cluster_name: 'prod-eu', cluster_id: 'c-42', registered: true},
        controllers: [
          {name: 'endpoint-discovery', enabled: true, running: true},
          {name: 'backup-discovery', enabled: true, running: false, reason: 'CRDMissing'},
        ],
      },
    })

    it('managedFields are left out of the document', () => {
      assert.equal('managedFields' in config.metadata, false)
      assert.equal(config.metadata.name, 'default')
    })

    it('phase, workspace, local cluster, conditions, controllers', () => {
      assert.equal(renderOperatorConfig(config, {now: NOW}), [
        'OperatorConfig polycrate/default',
        '--------------------------------',
        '  Phase:          Ready',
        '  Workspace:      acme-prod (organization Acme), resolved 3m ago',
        '  Local cluster:  prod-eu (id c-42), registered by the operator',
        '  Conditions:',
        '    TYPE           STATUS   REASON         MESSAGE',
        '    Ready          True     Configured     configuration is valid',
        '    ApiReachable   False    Unauthorized   the agent token was rejected',
        '  Controllers:',
        '    NAME                 RUNNING   REASON',
        '    endpoint-discovery   yes       -',
        '    backup-discovery     no        CRDMissing',
      ].join('\n'))
    })

    it('condition status is coloured True green, False red', () => {
      const coloured = renderOperatorConfig(config, {now: NOW, colour: true})
      assert.ok(coloured.includes('\x1b[32mTrue\x1b[39m'))
      assert.ok(coloured.includes('\x1b[31mFalse\x1b[39m'))
      assert.ok(coloured.includes('\x1b[32mReady\x1b[39m'))
    })

    const pending: Array<[string, unknown, unknown, string[]]> = [
      ['a fresh OperatorConfig with the defaults (api sync off)', {api_sync: {enabled: false}, local_cluster: {enabled: false}}, {}, [
        '  Phase:          no status yet: no operator has read it',
        '  Workspace:      not resolved: api_sync is disabled',
        '  Local cluster:  not registered: local_cluster is disabled',
        '  Conditions:     none',
        '  Controllers:    none reported',
      ]],
      ['api sync on, not resolved yet; a message', {api_sync: {enabled: true}, local_cluster: {enabled: true}},
        {phase: 'Pending', message: 'waiting for the token Secret'}, [
          '  Phase:          Pending',
          '  Message:        waiting for the token Secret',
          '  Workspace:      not resolved yet',
          '  Local cluster:  not registered yet',
          '  Conditions:     none',
          '  Controllers:    none reported',
        ]],
      ['ids only', {}, {api_sync: {workspace_id: 'ws-1'}, local_cluster: {cluster_id: 'c-1'}}, [
        '  Phase:          -',
        '  Workspace:      ws-1',
        '  Local cluster:  c-1',
        '  Conditions:     none',
        '  Controllers:    none reported',
      ]],
    ]
    for (const [title, spec, status, lines] of pending) {
      it(title, () => {
        const doc = operatorConfigDocument({metadata: {name: 'default', namespace: 'polycrate'}, spec, status})
        assert.equal(renderOperatorConfig(doc, {now: NOW}), ['OperatorConfig polycrate/default', '--------------------------------', ...lines].join('\n'))
      })
    }
  })

  describe('renderStatus and the report', () => {
    it('an empty cluster: title, cluster, no OperatorConfig, no resources', () => {
      const report = statusReport('https://k8s.example:6443', {operatorConfigs: [], listings: []}, NOW)
      assert.deepEqual(report, {cluster: 'https://k8s.example:6443', operatorConfigs: [], resources: [], held: []})
      assert.equal(renderStatus(report, {now: NOW}), [
        'Polycrate Operator Status',
        '=========================',
        'Cluster: https://k8s.example:6443',
        '',
        noOperatorConfig('polycrate', true),
        '',
        NO_RESOURCES,
      ].join('\n'))
    })

    it('no OperatorConfig: "runs with the defaults" only while an operator runs', () => {
      assert.equal(noOperatorConfig('polycrate', true), 'No OperatorConfig found: the operator in namespace polycrate runs with the defaults (create polycrate/default to configure it).')
      assert.doesNotMatch(noOperatorConfig('polycrate', false), /runs with the defaults/)
      assert.match(noOperatorConfig('polycrate', false), /no operator runs/)
    })

    it('kinds in allCrds order, rows by namespace and name, kinds without objects left out', () => {
      const oc = {metadata: {name: 'default', namespace: 'polycrate', creationTimestamp: ago(DAY)}, spec: {api_sync: {enabled: false}}, status: {phase: 'Ready'}}
      const report = statusReport('https://k8s', {
        operatorConfigs: [oc],
        listings: [
          {def: kind('OperatorConfig'), items: [oc]},
          {def: kind('K8sCluster'), items: [object('polycrate', 'production-cluster',
            {phase: 'Ready', syncStatus: 'synced', apiID: 'c-1', kubernetesVersion: 'v1.31.2'}, 2 * DAY, {apiServer: 'https://prod.example:6443'})]},
          {def: kind('K8sApp'), items: [
            object('prod', 'web', {phase: 'Synced', sync_status: 'synced', api_id: 'app-2', artifact_count: 2}, 90 * SECOND, {block: {name: 'web', version: '1.4.0'}}),
            object('dev', 'web', {phase: 'Failed', sync_status: 'error'}, 10 * HOUR),
          ]},
          {def: kind('Host'), items: []},
          {def: endpointCrd, items: [object('prod', 'a-example-com', {phase: 'Synced', syncStatus: 'synced', apiID: 'ep-1'}, 4 * MINUTE,
            {remoteAddress: 'a.example.com', remotePort: 443})]},
        ],
      }, NOW)
      assert.deepEqual(report.resources.map((r) => `${r.kind} ${r.namespace}/${r.name}`), [
        'OperatorConfig polycrate/default', 'K8sCluster polycrate/production-cluster', 'Endpoint prod/a-example-com',
        'K8sApp dev/web', 'K8sApp prod/web',
      ])
      assert.equal(renderStatus(report, {now: NOW}), [
        'Polycrate Operator Status',
        '=========================',
        'Cluster: https://k8s',
        '',
        'OperatorConfig polycrate/default',
        '--------------------------------',
        '  Phase:          Ready',
        '  Workspace:      not resolved: api_sync is disabled',
        '  Local cluster:  not registered: local_cluster is disabled',
        '  Conditions:     none',
        '  Controllers:    none reported',
        '',
        'OperatorConfigs',
        '---------------',
        '  NAMESPACE   NAME      API SYNC   WORKSPACE   PHASE   SYNC   API ID   AGE',
        '  polycrate   default   false      -           Ready   -      -        1d',
        '',
        'K8sClusters',
        '-----------',
        '  NAMESPACE   NAME                 API SERVER                  VERSION   PHASE   SYNC     API ID   AGE',
        '  polycrate   production-cluster   https://prod.example:6443   v1.31.2   Ready   synced   c-1      2d',
        '',
        'Endpoints',
        '---------',
        '  NAMESPACE   NAME            HOST            PORT   PATH   PHASE    SYNC     API ID   AGE',
        '  prod        a-example-com   a.example.com   443    -      Synced   synced   ep-1     4m',
        '',
        'K8sApps',
        '-------',
        '  NAMESPACE   NAME   BLOCK   VERSION   ARTIFACTS   PHASE    SYNC     API ID   AGE',
        '  dev         web    -       -         -           Failed   error    -        10h',
        '  prod        web    web     1.4.0     2           Synced   synced   app-2    1m',
      ].join('\n'))
    })

    it('messages', () => {
      assert.equal(CRDS_MISSING,
        'The polycrate.io CRDs are not installed in this cluster: run `polycrate operator install-crds` ' +
        '(or `polycrate operator crds | kubectl apply --server-side -f -`).')
      assert.equal(missingKindsWarning([kind('Artifact'), kind('Organization')]),
        'The CRDs of Artifact, Organization are not installed in this cluster, so they are left out: run `polycrate operator install-crds`.')
    })
  })
})

/** A fake API server for lists: `answer(path, query)` returns a page or throws. Records calls and concurrency. */
function fakeClient(answer: (path: string, query: Record<string, unknown>) => unknown | Promise<unknown>) {
  const calls: Array<{path: string; query: Record<string, unknown>}> = []
  let inFlight = 0
  let maxInFlight = 0
  const client: ListingClient = {
    async request<T>(options: RequestOptions): Promise<T> {
      const query = {...options.query}
      calls.push({path: options.path, query})
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      try {
        await new Promise((resolve) => setTimeout(resolve, 2))
        return (await answer(options.path, query)) as T
      } finally {
        inFlight--
      }
    },
  }
  return {client, calls, maxInFlight: () => maxInFlight}
}

const notFound = () => new KubeApiError(404, 'NotFound', 'the server could not find the requested resource')
const item = (name: string): InventoryObject => ({metadata: {name, namespace: 'ns'}})

describe('resources inventory', () => {
  it('list paths: namespaced kinds in the namespace, the cluster-scoped Artifact whole', () => {
    assert.equal(listPath(endpointCrd), '/apis/polycrate.io/v1alpha1/endpoints')
    assert.equal(listPath(endpointCrd, 'prod'), '/apis/polycrate.io/v1alpha1/namespaces/prod/endpoints')
    assert.equal(listPath(kind('Artifact'), 'prod'), '/apis/polycrate.io/v1alpha1/artifacts')
  })

  it('pages with limit=500 and continue until the token is empty', async () => {
    const pages: Record<string, {items: InventoryObject[]; metadata: {continue?: string}}> = {
      '': {items: [item('a'), item('b')], metadata: {continue: 't1'}},
      t1: {items: [item('c')], metadata: {continue: 't2'}},
      t2: {items: [item('d')], metadata: {continue: ''}},
    }
    const fake = fakeClient((_path, query) => pages[String(query.continue ?? '')])
    const items = await listAllPages<InventoryObject>(fake.client, '/x')
    assert.deepEqual(items.map((i) => i.metadata?.name), ['a', 'b', 'c', 'd'])
    assert.deepEqual(fake.calls.map((c) => c.query), [
      {limit: 500, continue: undefined}, {limit: 500, continue: 't1'}, {limit: 500, continue: 't2'},
    ])
  })

  it('an expired continue token (410) restarts the list once, from the start', async () => {
    let expired = false
    const fake = fakeClient((_path, query) => {
      if (query.continue === 'old' && !expired) {
        expired = true
        throw new KubeApiError(410, 'Expired', 'The provided continue parameter is too old')
      }
      return query.continue ? {items: [item('b')]} : {items: [item('a')], metadata: {continue: 'old'}}
    })
    const items = await listAllPages<InventoryObject>(fake.client, '/x')
    assert.deepEqual(items.map((i) => i.metadata?.name), ['a', 'b'])
    assert.equal(fake.calls.length, 4)
  })

  it('lists every kind, at most 4 at a time, and sorts them into allCrds order', async () => {
    const fake = fakeClient((path) => ({items: [item(path.split('/').pop()!)]}))
    const inventory = await collectInventory(fake.client)
    assert.equal(fake.calls.length, allCrds.length)
    assert.ok(fake.maxInFlight() <= 4 && fake.maxInFlight() > 1, `max in flight ${fake.maxInFlight()}`)
    assert.deepEqual(inventory.listings.map((l) => l.def.kind), allCrds.map((def) => def.kind))
    assert.deepEqual(inventory.operatorConfigs.map((o) => o.metadata?.name), ['operatorconfigs'])
    assert.deepEqual(inventory.missing, [])
  })

  it('OperatorConfigs are listed even when only other kinds are asked for', async () => {
    const fake = fakeClient((path) => ({items: path.endsWith('operatorconfigs') ? [item('default')] : [item('x')]}))
    const inventory = await collectInventory(fake.client, {kinds: [endpointCrd], namespace: 'ns'})
    assert.deepEqual(fake.calls.map((c) => c.path).sort(), [
      '/apis/polycrate.io/v1alpha1/namespaces/ns/endpoints',
      '/apis/polycrate.io/v1alpha1/namespaces/ns/operatorconfigs',
    ])
    assert.deepEqual(inventory.listings.map((l) => l.def.kind), ['Endpoint'])
    assert.deepEqual(inventory.operatorConfigs.map((o) => o.metadata?.name), ['default'])
  })

  it('every list answering 404: CrdsMissingError (the CRDs are not installed)', async () => {
    const fake = fakeClient(() => {
      throw notFound()
    })
    await assert.rejects(collectInventory(fake.client), (error: unknown) => {
      assert.ok(error instanceof CrdsMissingError)
      assert.equal(error.missing.length, allCrds.length)
      return true
    })
  })

  it('some kinds answering 404: the others are listed, the missing ones named', async () => {
    const fake = fakeClient((path) => {
      if (path.endsWith('/artifacts') || path.endsWith('/organizations')) throw notFound()
      return {items: []}
    })
    const inventory = await collectInventory(fake.client)
    assert.deepEqual(inventory.missing.map((def) => def.kind), ['Artifact', 'Organization'])
    assert.equal(inventory.listings.length, allCrds.length - 2)
  })

  it('a 404 on the OperatorConfig list alone: no OperatorConfigs, OperatorConfig missing', async () => {
    const fake = fakeClient((path) => {
      if (path.endsWith('/operatorconfigs')) throw notFound()
      return {items: [item('e')]}
    })
    const inventory = await collectInventory(fake.client, {kinds: [endpointCrd]})
    assert.deepEqual(inventory.operatorConfigs, [])
    assert.deepEqual(inventory.missing.map((def) => def.kind), ['OperatorConfig'])
    assert.deepEqual(inventory.listings.map((l) => l.def.kind), ['Endpoint'])
  })

  it('403 or an unreachable server is thrown as it is, and no new list is started after it', async () => {
    const forbidden = fakeClient((path) => {
      if (path.endsWith('/operatorconfigs')) throw new KubeApiError(403, 'Forbidden', 'endpoints is forbidden')
      return {items: []}
    })
    await assert.rejects(collectInventory(forbidden.client), (error: unknown) => error instanceof KubeApiError && error.status === 403)
    assert.ok(forbidden.calls.length <= 4, `${forbidden.calls.length} lists after the failure`)

    const down = fakeClient(() => {
      throw new KubeConnectionError('https://127.0.0.1:1', 'ECONNREFUSED', 'ECONNREFUSED: connect')
    })
    await assert.rejects(collectInventory(down.client), KubeConnectionError)
  })
})
