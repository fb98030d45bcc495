#!/usr/bin/env bash
# Builds the real etcd, kube-apiserver and kube-controller-manager used by the integration tests,
# from the Go modules pinned in go.mod/go.sum. Output goes to a cache outside the repo, keyed by
# the hash of go.sum, and the build is skipped when the binaries are already there.
# Prints the cache directory on stdout (last line).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
key=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-16)
version=$(awk '$1=="k8s.io/kubernetes"{print $2}' "$here/go.mod" | head -n1)
cache_root=${POLYCRATE_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/polycrate-operator}
out="$cache_root/k8s-$version-$key"
bins=(etcd kube-apiserver kube-controller-manager)
have_all=1
for b in "${bins[@]}"; do [ -x "$out/$b" ] || have_all=0; done
if [ "$have_all" = 1 ]; then echo "$out"; exit 0; fi

mkdir -p "$out"
lock="$cache_root/.build.lock"
exec 9>"$lock"
flock 9
# another build may have finished while we waited for the lock
have_all=1
for b in "${bins[@]}"; do [ -x "$out/$b" ] || have_all=0; done
if [ "$have_all" = 1 ]; then echo "$out"; exit 0; fi

export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod
cd "$here"
start=$(date +%s)
build() { # pkg name
  echo "building $2 ($1) …" >&2
  go build -trimpath -ldflags "-s -w" -o "$out/$2.tmp" "$1"
  mv "$out/$2.tmp" "$out/$2"
}
build go.etcd.io/etcd/server/v3 etcd
build k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver
build k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager
echo "control plane built in $(( $(date +%s) - start ))s into $out" >&2
echo "$out"
