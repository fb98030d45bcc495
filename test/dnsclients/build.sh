#!/usr/bin/env bash
# Builds the real DNS webhook clients the integration tests drive, from the Go modules pinned here:
#   external-dns        sigs.k8s.io/external-dns (external-dns/go.mod; ~4-7 min cold on 2 cores, 105 MB)
#   certmanager-driver  a small main around cert-manager's own DNS01 webhook client (certmanager-driver/)
# Output goes to the same cache as the control plane (~/.cache/polycrate-operator), keyed by version and by the
# hash of each module's files; a binary that is already there is not built again.
# Prints the directory of each binary on stdout, one `name=path` line per client.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache_root=${POLYCRATE_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/polycrate-operator}
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly  # go.mod + go.sum are complete: the build never edits them

# client dir, module that carries the version, package to build, binary name
build() {
  local dir=$1 module=$2 pkg=$3 name=$4
  local version key out
  version=$(awk -v m="$module" '$1==m{print $2} $2==m{print $3}' "$here/$dir/go.mod" | head -n1)
  key=$(cat "$here/$dir"/go.mod "$here/$dir"/go.sum "$here/$dir"/*.go | sha256sum | cut -c1-16)
  out="$cache_root/$name-$version-$key"
  if [ ! -x "$out/$name" ]; then
    mkdir -p "$out"
    exec 9>"$cache_root/.build.lock"
    flock 9
    if [ ! -x "$out/$name" ]; then
      echo "building $name $version ($pkg) …" >&2
      local start=$SECONDS
      (cd "$here/$dir" && go build -trimpath -ldflags "-s -w" -o "$out/$name.tmp" "$pkg")
      mv "$out/$name.tmp" "$out/$name"
      echo "$name built in $(( SECONDS - start ))s into $out" >&2
    fi
    flock -u 9
  fi
  echo "$name=$out/$name"
}

build external-dns sigs.k8s.io/external-dns sigs.k8s.io/external-dns external-dns
build certmanager-driver github.com/cert-manager/cert-manager . certmanager-driver
