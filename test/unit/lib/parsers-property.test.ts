/**
 * Property-based tests (fast-check) for the parsers of untrusted input: endpoint annotations, meta secrets, Go
 * durations, crons, quantities. Each property is written down above its test. Runs are seeded by fast-check and
 * print the seed and the shrunk counterexample on failure, so a failure can be replayed.
 */
import assert from 'node:assert/strict'
import fc from 'fast-check'
import {operatorConfigSpec} from '../../../src/crds/operatorconfig.js'
import {checkCron} from '../../../src/lib/cron.js'
import {canonicalGoDuration, formatGoDuration, parseGoDuration} from '../../../src/lib/duration.js'
import {parseQuantity, toCores, toMebibytes} from '../../../src/lib/quantity.js'
import {annotations} from '../../../src/operator/conventions.js'
import {readHostConfig, readMonitorChoice, readSourceSettings} from '../../../src/operator/kinds/endpoint/endpoint.annotations.js'
import {parseMetaSecret} from '../../../src/operator/kinds/k8sapp/k8sapp.mapping.js'

const runs = {numRuns: 300}
const MIN_INT64 = -(1n << 63n)
const MAX_INT64 = (1n << 63n) - 1n
/** Any text, with the characters these parsers care about made frequent. */
const text = fc.oneof(
  fc.string({unit: 'grapheme', maxLength: 40}),
  fc.string({unit: fc.constantFrom(...'0123456789.+-eEKMGTPiknumsµμhd @*/,?-LW#TZ=CRON_ \t'.split('')), maxLength: 30}),
)

describe('Go durations (property-based)', () => {
  // Property: parseGoDuration never throws; it yields undefined or an int64 of nanoseconds.
  it('never throws, and any value it returns is within int64', () => {
    fc.assert(fc.property(text, (input) => {
      const value = parseGoDuration(input)
      return value === undefined || (value >= MIN_INT64 && value <= MAX_INT64)
    }), runs)
  })
  // Property (round trip with the printer): for every int64 n, parse(format(n)) = n — Go's String() is parseable
  // by Go's ParseDuration and loses nothing.
  it('parse(format(n)) = n for every int64', () => {
    fc.assert(fc.property(fc.bigInt({min: MIN_INT64, max: MAX_INT64}), (n) => parseGoDuration(formatGoDuration(n)) === n), runs)
  })
  // Property: canonicalization is idempotent, and keeps the value.
  it('canonical(canonical(x)) = canonical(x), with the same value', () => {
    fc.assert(fc.property(fc.array(fc.tuple(fc.nat(10_000), fc.constantFrom('ns', 'us', 'µs', 'ms', 's', 'm', 'h')), {minLength: 1, maxLength: 4}), (terms) => {
      const input = terms.map(([n, unit]) => `${n}${unit}`).join('')
      const once = canonicalGoDuration(input)
      return once !== undefined && canonicalGoDuration(once) === once && parseGoDuration(once) === parseGoDuration(input)
    }), runs)
  })
  it('rejects what Go rejects, accepts what Go accepts (known cases)', () => {
    for (const bad of ['', '10', '1d', '1 h', '.', '-', '+', '1h 30m', 'h', '.s', '9223372036854775808ns', '1e3s']) assert.equal(parseGoDuration(bad), undefined, bad)
    for (const [good, nanos] of [['0', 0n], ['+0', 0n], ['-0', 0n], ['1.5h', 5_400_000_000_000n], ['.5s', 500_000_000n], ['1µs', 1000n], ['1μs', 1000n], ['-9223372036854775808ns', MIN_INT64]] as const) {
      assert.equal(parseGoDuration(good), nanos, good)
    }
  })
})

describe('Kubernetes quantities (property-based)', () => {
  // Property: parseQuantity never throws and returns undefined or a finite number; the capacity helpers return
  // undefined or a non-negative safe integer.
  it('never throws; a result is finite; toMebibytes/toCores give non-negative safe integers or nothing', () => {
    fc.assert(fc.property(text, (input) => {
      const value = parseQuantity(input)
      const ok = (n: number | undefined) => n === undefined || (Number.isSafeInteger(n) && n >= 0)
      return (value === undefined || Number.isFinite(value)) && ok(toMebibytes(input)) && ok(toCores(input))
    }), runs)
  })
  // Property (round trip with the suffixes): an integer with a binary suffix is that integer times 2^(10k); with a
  // decimal SI suffix times 10^(3k); with an exponent times 10^e.
  it('n<suffix> = n × the suffix\'s factor', () => {
    const binary = {Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40}
    const decimal = {'': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12}
    fc.assert(fc.property(fc.integer({min: -1_000_000, max: 1_000_000}), fc.constantFrom(...Object.keys(binary)), fc.constantFrom(...Object.keys(decimal)), fc.integer({min: -6, max: 12}), (n, b, d, e) =>
      parseQuantity(`${n}${b}`) === n * binary[b as keyof typeof binary]
      && parseQuantity(`${n}${d}`) === n * decimal[d as keyof typeof decimal]
      && parseQuantity(`${n}e${e}`) === Number(`${n}e${e}`)), runs)
  })
  it('rejects what Kubernetes rejects, accepts what it accepts (known cases)', () => {
    for (const bad of ['', '10 Gi', 'Gi', '1Gb', '1KiB', '1K', 'NaN', 'Infinity', '0x10', '1_000', '1e400', '--1', '1.2.3']) assert.equal(parseQuantity(bad), undefined, bad)
    for (const [good, value] of [['-1', -1], ['250000n', 0.00025], ['1.15k', 1150], ['.5', 0.5], ['5.', 5], ['1e3', 1000], [' 2Gi ', 2 * 2 ** 30]] as const) assert.equal(parseQuantity(good), value, good)
  })
})

describe('Cron expressions (property-based)', () => {
  // Property: checkCron never throws, for both dialects, and always answers valid or an error message.
  it('never throws; always valid, or invalid with an error', () => {
    fc.assert(fc.property(text, fc.constantFrom('standard' as const, 'cnpg' as const), (input, dialect) => {
      const check = checkCron(input, dialect)
      return check.valid ? true : typeof check.error === 'string' && check.error.length > 0
    }), runs)
  })
  // Property: every 5-field expression of in-range values, ranges a-b with a ≤ b, steps ≥ 1 is valid for Velero
  // (robfig v3 ParseStandard); with a seconds field in front, valid for CloudNativePG (robfig v1 Parse).
  const field = (min: number, max: number) => fc.oneof(
    fc.constant('*'),
    fc.integer({min, max}).map(String),
    fc.tuple(fc.integer({min, max}), fc.integer({min, max})).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
    fc.tuple(fc.integer({min, max}), fc.integer({min: 1, max: 30})).map(([a, step]) => `${a}/${step}`),
    fc.integer({min: 1, max: 30}).map((step) => `*/${step}`),
  )
  const fiveFields = fc.tuple(field(0, 59), field(0, 23), field(1, 31), field(1, 12), field(0, 6)).map((fields) => fields.join(' '))
  it('well-formed expressions are valid: 5 fields for Velero, 6 (seconds first) for CloudNativePG', () => {
    fc.assert(fc.property(fiveFields, field(0, 59), (five, seconds) =>
      checkCron(five, 'standard').valid && checkCron(`${seconds} ${five}`, 'cnpg').valid), runs)
  })
  it('rejects what robfig/cron rejects (known cases)', () => {
    for (const bad of ['', '60 * * * *', '* 24 * * *', '* * 0 * *', '* * * 13 *', '* * * * 7', '5-1 * * * *', '*/0 * * * *', '* * * *', '@every 10', '@every', '@Daily', 'TZ=Nowhere/City 0 3 * * *', '0 3 * * * *']) {
      assert.equal(checkCron(bad, 'standard').valid, false, bad)
    }
    for (const good of ['0 3 * * *', '@daily', '@every 1h30m', 'TZ=Europe/Berlin 0 3 * * *', 'CRON_TZ=UTC 0 3 * * mon-fri', '0 0 1 jan *']) assert.equal(checkCron(good, 'standard').valid, true, good)
    assert.equal(checkCron('0 0 2 * * *', 'cnpg').valid, true)
    assert.equal(checkCron('TZ=UTC 0 0 2 * * *', 'cnpg').valid, false, 'no time-zone prefix in robfig v1')
  })
})

describe('Endpoint annotations (property-based)', () => {
  const settings = {...operatorConfigSpec.parse({}).endpoint_discovery}
  const keys = [annotations.endpointMonitor, annotations.endpointPath, annotations.endpointTimeout, annotations.endpointInterval, annotations.endpointExpectedStatus, annotations.endpointTls, annotations.endpointPort, annotations.endpointHostConfig, 'endpoints.polycrate.io/enabled', 'endpoints.polycrate.io/ignore', 'endpoints.polycrate.io/expected-body']
  const annotationMap = fc.dictionary(fc.constantFrom(...keys), fc.oneof(text, fc.json()), {maxKeys: 6})
  // Property: reading any annotations never throws; the settings are always usable (a timeout and an interval that
  // are positive integers, status codes within 100-599, a port within 1-65535 when set), and whatever was not
  // accepted is reported as a problem rather than dropped silently.
  it('never throws; the settings read are always within their ranges', () => {
    fc.assert(fc.property(annotationMap, fc.constantFrom('Ingress' as const, 'HTTPRoute' as const), (all, kind) => {
      const read = readSourceSettings({annotations: all}, kind, settings)
      readMonitorChoice(all, 'annotation')
      readHostConfig(all, ['app.example.com'])
      return Number.isInteger(read.timeout) && read.timeout > 0 && Number.isInteger(read.interval) && read.interval > 0
        && read.expectedStatusCodes.length > 0 && read.expectedStatusCodes.every((code) => code >= 100 && code <= 599)
        && (read.port === undefined || (Number.isInteger(read.port) && read.port >= 1 && read.port <= 65535))
    }), runs)
  })
  // Property: a host config that is not a JSON object (any other JSON, or not JSON) is one problem and no override.
  it('a host config that is not a JSON object → one problem, no overrides', () => {
    fc.assert(fc.property(fc.oneof(fc.json().filter((json) => !/^\s*\{/.test(json)), text.filter((t) => t.trim() !== '' && !/^\s*\{/.test(t))), (value) => {
      const {overrides, problems} = readHostConfig({[annotations.endpointHostConfig]: value}, ['app.example.com'])
      return overrides.size === 0 && problems.length === 1
    }), runs)
  })
})

describe('Meta secrets (property-based)', () => {
  const b64 = (value: string) => Buffer.from(value, 'utf8').toString('base64')
  // Property: parseMetaSecret never throws, whatever the data (any bytes, any keys); it gives a spec or problems.
  it('never throws; a spec or at least one problem', () => {
    const data = fc.dictionary(fc.constantFrom('meta', 'meta.yaml', 'meta.json', 'values', 'x'), fc.oneof(fc.uint8Array({maxLength: 64}).map((bytes) => Buffer.from(bytes).toString('base64')), text.map(b64), fc.json().map(b64)), {maxKeys: 3})
    fc.assert(fc.property(fc.option(data, {nil: undefined}), (input) => {
      const result = parseMetaSecret('app.poly', input)
      return result.spec !== undefined || result.problems.length > 0
    }), runs)
  })
  // Property (secrets stay secret): a problem message never quotes the secret's data — a value planted anywhere in
  // a malformed document never appears in a message. The one deliberate exception, action.status (an enum-like
  // word the user needs to see: "exploded" is not success, running or failed), is quoted cut to 40 characters.
  it('problem messages never contain the data', () => {
    const secret = fc.string({unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789'.split('')), minLength: 16, maxLength: 24}).map((s) => `S3cr3t${s}`)
    const documents = (value: string) => [
      `block: [${value}`, `block: ${value}`, `- ${value}`, value, `block: {name: [${value}]}`,
      `workspace: {name: {x: ${value}}}`, JSON.stringify({block: {name: 1, version: {v: value}}}), `block:\n  name: web\n  chart: ${value}`,
    ]
    fc.assert(fc.property(secret, (value) => documents(value).every((document) =>
      parseMetaSecret('app.poly', {meta: b64(document)}).problems.every((problem) => !problem.message.includes(value)))), runs)
    fc.assert(fc.property(fc.string({minLength: 41, maxLength: 200}).filter((s) => !/["\\\n\r]/.test(s)), (status) => {
      const problems = parseMetaSecret('app.poly', {meta: b64(JSON.stringify({action: {name: 'install', status}}))}).problems
      return problems.every((problem) => !problem.message.includes(status))
    }), runs)
  })
})
