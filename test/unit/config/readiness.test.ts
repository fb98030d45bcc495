import assert from 'node:assert/strict'
import {operatorConfigSpec} from '../../../src/crds/operatorconfig.js'
import {operatorConfigStatus} from '../../../src/operator/config/operator-config.js'
import type {ControllerState} from '../../../src/operator/runtime/feature-state.js'
import {readiness, type ConfigState, type ReadinessInput} from '../../../src/operator/config/readiness.js'

const valid: ConfigState = {kind: 'valid'}
const lastValid: ConfigState = {kind: 'last-valid', problems: ['spec.node_discovery.label_selector: "a b" is not a valid label selector'], lastValidGeneration: 3}
const neverValid: ConfigState = {kind: 'never-valid', problems: ['spec.a: bad'], apiSyncOnly: true}
const portInUse = {name: 'external-dns-webhook', problem: 'could not start: bind address 127.0.0.1:8888 is in use'}
const forbidden = {name: 's3-bucket-provisioning', reason: 'Forbidden: the operator may not create secrets cluster-wide; the installed RBAC lacks this feature\'s rules'}
const noCrd = new Map([['endpoints.polycrate.io', ['endpoint-discovery']]])

describe('readiness: one verdict for the Ready condition, /readyz, health and status', () => {
  const cases: Array<{name: string; input: Partial<ReadinessInput>; ready: boolean; phase: string; reason: string; failing: string[]}> = [
    {name: 'valid, everything runs', input: {config: valid}, ready: true, phase: 'Ready', reason: 'ControllersRunning', failing: []},
    {name: 'not decided yet (no reconcile so far)', input: {config: undefined}, ready: true, phase: 'Ready', reason: 'ControllersRunning', failing: []},
    {name: 'a feature failed', input: {config: valid, failed: [portInUse]}, ready: false, phase: 'Degraded', reason: 'FeatureFailed', failing: ['features']},
    {name: 'an invalid change, the last valid configuration in force', input: {config: lastValid}, ready: true, phase: 'Degraded', reason: 'LastValidConfigInForce', failing: []},
    {name: 'an invalid change does not hide a failed feature (issue 31 item 5)', input: {config: lastValid, failed: [portInUse]}, ready: false, phase: 'Degraded', reason: 'FeatureFailed', failing: ['features']},
    {name: 'an invalid change does not hide a missing CRD', input: {config: lastValid, missingOwnCrds: noCrd}, ready: false, phase: 'Degraded', reason: 'CRDsMissing', failing: ['crds']},
    {name: 'never valid: discovery paused', input: {config: neverValid}, ready: false, phase: 'Error', reason: 'DiscoveryPaused', failing: ['config']},
    {name: 'never valid and a feature failed', input: {config: neverValid, failed: [portInUse]}, ready: false, phase: 'Error', reason: 'DiscoveryPaused', failing: ['config', 'features']},
    {name: 'a feature forbidden (its RBAC rules missing)', input: {config: valid, forbidden: [forbidden]}, ready: false, phase: 'Degraded', reason: 'FeatureForbidden', failing: ['features']},
    {name: 'an invalid change does not hide a forbidden feature', input: {config: lastValid, forbidden: [forbidden]}, ready: false, phase: 'Degraded', reason: 'FeatureForbidden', failing: ['features']},
    {name: 'one feature failed, another forbidden: FeatureFailed', input: {config: valid, failed: [portInUse], forbidden: [forbidden]}, ready: false, phase: 'Degraded', reason: 'FeatureFailed', failing: ['features']},
    {name: 'a CRD missing and a feature failed: the CRD first', input: {config: valid, missingOwnCrds: noCrd, failed: [portInUse]}, ready: false, phase: 'Degraded', reason: 'CRDsMissing', failing: ['crds', 'features']},
  ]
  for (const c of cases) {
    it(`${c.name}: ${c.ready ? 'ready' : 'not ready'} (${c.reason})`, () => {
      const verdict = readiness({config: undefined, missingOwnCrds: new Map(), failed: [], forbidden: [], running: ['endpoint-discovery'], ...c.input})
      assert.equal(verdict.ready, c.ready)
      assert.equal(verdict.phase, c.phase)
      assert.equal(verdict.reason, c.reason)
      const failing = Object.entries(verdict.checks).filter(([, check]) => !check.ok).map(([name]) => name)
      assert.deepEqual(failing, c.failing)
      assert.equal(verdict.ready, failing.length === 0, '/readyz passes exactly when the condition is True')
    })
  }

  it('walks the transitions of the issue: the Ready condition and /readyz agree at every step', () => {
    const config = operatorConfigSpec.parse({})
    const running: ControllerState = {name: 'external-dns-webhook', enabled: true, running: true, reason: 'Running'}
    const failed: ControllerState = {name: 'external-dns-webhook', enabled: true, running: false, reason: `Failed: ${portInUse.problem}`}
    const refused: ControllerState = {...forbidden, enabled: true, running: false}
    const steps: Array<{step: string; validation: {ok: true; config: typeof config} | {ok: false; problems: string[]}; controllers: ControllerState[]; inForce?: {lastValidGeneration: number}; ready: 'True' | 'False'; reason: string}> = [
      {step: 'started', validation: {ok: true, config}, controllers: [running], ready: 'True', reason: 'ControllersRunning'},
      {step: 'the webhook\'s port taken', validation: {ok: true, config}, controllers: [failed], ready: 'False', reason: 'FeatureFailed'},
      {step: 'then an invalid config applied', validation: {ok: false, problems: [...lastValid.problems]}, controllers: [failed], inForce: {lastValidGeneration: 1}, ready: 'False', reason: 'FeatureFailed'},
      {step: 'the port free again, still invalid', validation: {ok: false, problems: [...lastValid.problems]}, controllers: [running], inForce: {lastValidGeneration: 1}, ready: 'True', reason: 'LastValidConfigInForce'},
      {step: 'the config fixed', validation: {ok: true, config}, controllers: [running], ready: 'True', reason: 'ControllersRunning'},
      {step: 'S3 enabled without its RBAC rules', validation: {ok: true, config}, controllers: [running, refused], ready: 'False', reason: 'FeatureForbidden'},
      {step: 'and the webhook\'s port taken too', validation: {ok: true, config}, controllers: [failed, refused], ready: 'False', reason: 'FeatureFailed'},
      {step: 'install added the rules', validation: {ok: true, config}, controllers: [running, {...refused, running: true, reason: 'Running'}], ready: 'True', reason: 'ControllersRunning'},
    ]
    let previous
    for (const step of steps) {
      const status = operatorConfigStatus(previous, 1, step.validation, step.controllers, 't', new Map(), step.inForce)
      const condition = status.conditions!.find((c) => c.type === 'Ready')!
      assert.deepEqual([condition.status, condition.reason], [step.ready, step.reason], step.step)
      const probe = readiness({
        config: step.validation.ok ? valid : {kind: 'last-valid', problems: step.validation.problems, lastValidGeneration: 1},
        missingOwnCrds: new Map(),
        failed: step.controllers.filter((c) => c.reason?.startsWith('Failed: ')).map((c) => ({name: c.name, problem: c.reason!.slice(8)})),
        forbidden: step.controllers.filter((c) => c.reason?.startsWith('Forbidden: ')).map((c) => ({name: c.name, reason: c.reason!})),
        running: [],
      })
      assert.equal(Object.values(probe.checks).every((check) => check.ok), step.ready === 'True', `/readyz at "${step.step}"`)
      if (!step.validation.ok) assert.equal(status.conditions!.find((c) => c.type === 'Valid')?.status, 'False', `Valid=False at "${step.step}"`)
      if (step.reason === 'FeatureFailed' && !step.validation.ok) assert.match(status.message ?? '', /Not running: external-dns-webhook .*Invalid OperatorConfig: .*stays in force/, 'the message says both')
      previous = status
    }
  })
})
