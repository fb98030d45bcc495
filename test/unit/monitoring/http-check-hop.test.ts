import assert from 'node:assert/strict'
import {hopRequestOptions} from '../../../src/operator/monitoring/http-check.js'
import type {HttpPlan} from '../../../src/operator/monitoring/plan.js'

const plan = {userAgent: 'polycrate-monitor', ignoreTlsErrors: false} as HttpPlan
const signal = new AbortController().signal

describe('http check: one hop\'s request options', () => {
  const cases: Array<[string, string, Partial<HttpPlan>, {ca?: string[]}, Record<string, unknown>]> = [
    ['http, default port, the Host header of the URL', 'http://app.example.com/health?x=1', {}, {},
      {host: '10.0.0.1', port: 80, path: '/health?x=1', headers: {host: 'app.example.com', 'user-agent': 'polycrate-monitor', accept: '*/*'}}],
    ['https: SNI, no verification here (checked on secureConnect), the CA when given', 'https://app.example.com:8443/', {}, {ca: ['PEM']},
      {port: 8443, servername: 'app.example.com', rejectUnauthorized: false, ca: ['PEM']}],
    ['https to an IP: no SNI', 'https://[::1]/', {}, {}, {port: 443, servername: undefined}],
    ['a redirect hop carries the referer', 'http://app.example.com/b', {referer: 'http://app.example.com/a'}, {},
      {headers: {host: 'app.example.com', 'user-agent': 'polycrate-monitor', accept: '*/*', referer: 'http://app.example.com/a'}}],
  ]
  for (const [name, url, extra, options, expected] of cases) {
    it(name, () => {
      const got = hopRequestOptions(new URL(url), {...plan, ...extra}, 'GET', '10.0.0.1', signal, options) as Record<string, unknown>
      for (const [key, value] of Object.entries(expected)) assert.deepEqual(got[key], value, key)
      assert.equal(got.agent, false)
      assert.equal(got.signal, signal)
    })
  }
})
