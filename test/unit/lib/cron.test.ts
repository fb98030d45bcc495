import assert from 'node:assert/strict'
import {checkCron, type CronCheck, type CronDialect} from '../../../src/lib/cron.js'

const fields: CronCheck = {valid: true, form: 'fields'}
const descriptor: CronCheck = {valid: true, form: 'descriptor'}
const fiveFieldCnpg: CronCheck = {valid: true, form: 'fields', fiveFieldCnpg: true}
const invalid = (error: string): CronCheck => ({valid: false, error})

describe('cron checks', () => {
  const cases: Array<[CronDialect, string, CronCheck]> = [
    // Velero: robfig/cron v3 ParseStandard
    ['standard', '0 3 * * *', fields],
    ['standard', '*/15 * * * *', fields],
    ['standard', '0  3   * * *', fields],
    ['standard', '5,10,15 1-5/2 * * *', fields],
    ['standard', '0 0 1 jan *', fields],
    ['standard', '0 0 * JAN-Mar mon-FRI', fields],
    ['standard', '0 0 * * 0', fields],
    ['standard', '0 0 ? * ?', fields],
    ['standard', '0 12 1/5 * *', fields],
    ['standard', '@daily', descriptor],
    ['standard', '@midnight', descriptor],
    ['standard', '@every 6h', descriptor],
    ['standard', '@every 1h30m', descriptor],
    ['standard', 'CRON_TZ=Europe/Berlin 0 3 * * *', fields],
    ['standard', 'TZ=UTC @daily', descriptor],
    ['standard', '', invalid('the schedule is empty')],
    ['standard', 'every day', invalid('expected exactly 5 fields (minute hour day-of-month month day-of-week), found 2')],
    ['standard', '0 3 * *', invalid('expected exactly 5 fields (minute hour day-of-month month day-of-week), found 4')],
    ['standard', '0 0 3 * * *', invalid('expected exactly 5 fields (minute hour day-of-month month day-of-week), found 6')],
    ['standard', '60 * * * *', invalid('minute field "60": 60 is above the maximum 59')],
    ['standard', '0 24 * * *', invalid('hour field "24": 24 is above the maximum 23')],
    ['standard', '0 0 0 * *', invalid('day-of-month field "0": 0 is below the minimum 1')],
    ['standard', '0 0 * 13 *', invalid('month field "13": 13 is above the maximum 12')],
    ['standard', '0 0 * * 7', invalid('day-of-week field "7": 7 is above the maximum 6')],
    ['standard', '*/0 * * * *', invalid('minute field "*/0": step of "*/0" must be a positive number')],
    ['standard', '5-1 * * * *', invalid('minute field "5-1": the range "5-1" runs backwards')],
    ['standard', '1-2-3 * * * *', invalid('minute field "1-2-3": too many hyphens in "1-2-3"')],
    ['standard', '1/2/3 * * * *', invalid('minute field "1/2/3": too many slashes in "1/2/3"')],
    ['standard', '1,,2 * * * *', invalid('minute field "1,,2": "" is not a number')],
    ['standard', 'a * * * *', invalid('minute field "a": "a" is not a number')],
    ['standard', '0 0 L * *', invalid('day-of-month field "L": "L" is not a number')],
    ['standard', '0 0 * * mon#2', invalid('day-of-week field "mon#2": "mon#2" is not a number')],
    ['standard', '@daily2', invalid('unrecognized descriptor "@daily2" (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration>)')],
    ['standard', '@Daily', invalid('unrecognized descriptor "@Daily" (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration>)')],
    ['standard', '@every 1d', invalid('"1d" in "@every 1d" is not a Go duration such as 1h30m')],
    ['standard', '@every', invalid('unrecognized descriptor "@every" (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration>)')],
    ['standard', 'CRON_TZ=Mars/Olympus 0 3 * * *', invalid('unknown time zone "Mars/Olympus"')],
    ['standard', 'TZ=UTC', invalid('"TZ=UTC" has a time-zone prefix but no schedule after it')],
    // CloudNativePG: robfig/cron v1 Parse (seconds first, day-of-week optional)
    ['cnpg', '0 0 3 * * *', fields],
    ['cnpg', '0 */30 * * * mon-fri', fields],
    ['cnpg', '@weekly', descriptor],
    ['cnpg', '@every 24h', descriptor],
    ['cnpg', '0 0 * * *', fiveFieldCnpg],
    ['cnpg', '', invalid('the schedule is empty')],
    ['cnpg', '* * * *', invalid('expected 6 fields (second minute hour day-of-month month day-of-week), found 4')],
    ['cnpg', '0 0 0 0 * * *', invalid('expected 6 fields (second minute hour day-of-month month day-of-week), found 7')],
    ['cnpg', '60 0 3 * * *', invalid('second field "60": 60 is above the maximum 59')],
    ['cnpg', '0 0 3 * * 7', invalid('day-of-week field "7": 7 is above the maximum 6')],
    ['cnpg', 'CRON_TZ=UTC 0 0 3 * * *', invalid('expected 6 fields (second minute hour day-of-month month day-of-week), found 7')],
    ['cnpg', 'every day', invalid('expected 6 fields (second minute hour day-of-month month day-of-week), found 2')],
  ]
  for (const [dialect, expression, expected] of cases) {
    it(`${dialect}: ${JSON.stringify(expression)}`, () => assert.deepEqual(checkCron(expression, dialect), expected))
  }

  it('never throws on a non-string', () => {
    assert.deepEqual(checkCron(undefined as unknown as string, 'standard'), invalid('the schedule is empty'))
  })
})
