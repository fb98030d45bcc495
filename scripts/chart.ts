/**
 * `npm run chart`: writes the Helm chart (src/operator/chart/chart.ts) to dist/chart/polycrate-operator/ and packs it
 * as dist/chart/polycrate-operator-<version>.tgz (what `helm package` makes: the chart directory in a gzipped tar;
 * reproducible: sorted, no owners, no times). Prints the archive's path.
 */
import {execFileSync} from 'node:child_process'
import {mkdirSync, rmSync, writeFileSync} from 'node:fs'
import path from 'node:path'
import {buildChart, CHART_NAME} from '../src/operator/chart/chart.js'
import {operatorVersion} from '../src/version.js'

const root = path.resolve(import.meta.dirname, '..')
const out = path.join(root, 'dist/chart')
const started = Date.now()
const chart = buildChart({version: operatorVersion()})
const dir = path.join(out, CHART_NAME)
rmSync(dir, {recursive: true, force: true})
for (const [file, content] of chart.files) {
  mkdirSync(path.dirname(path.join(dir, file)), {recursive: true})
  writeFileSync(path.join(dir, file), content)
}
const archive = path.join(out, `${CHART_NAME}-${chart.version}.tgz`)
const tar = execFileSync('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '--mode=u+rw,go+r,a-s', '-C', out, '-cf', '-', CHART_NAME], {maxBuffer: 64 * 1024 * 1024})
writeFileSync(archive, execFileSync('gzip', ['-n', '-9'], {input: tar, maxBuffer: 64 * 1024 * 1024}))
const branches = chart.objects.reduce((count, object) => count + object.branches.length, 0)
process.stderr.write(`chart ${CHART_NAME} ${chart.version}: ${chart.objects.length} templates (${chart.objects.filter((object) => object.presence.length > 0).length} conditional, ${branches} branches) in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
process.stdout.write(`${archive}\n`)
