#!/usr/bin/env bash
# Builds the real Kubernetes binaries the tests run, from the Go modules pinned in go.mod/go.sum. Output goes to a
# cache outside the repo, keyed by the hash of go.mod + go.sum; each binary that is already there is kept, only the
# missing ones are built.
#
#   build.sh          etcd, kube-apiserver, kube-controller-manager (the control plane of the integration tests)
#   build.sh --node   the same plus kube-scheduler, kube-proxy and kubelet (the cluster with a real Node)
#
# Every binary carries the Kubernetes version of go.mod (-X k8s.io/component-base/version.gitVersion=…), so the
# Node and the apiserver report v1.x.y rather than v0.0.0-master.
# Prints the cache directory on stdout (last line).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bins=(etcd kube-apiserver kube-controller-manager)
case "${1:-}" in
  '') ;;
  --node) bins+=(kube-scheduler kube-proxy kubelet) ;;
  *) echo "usage: $0 [--node]" >&2; exit 2 ;;
esac
key=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-16)
version=$(awk '$1=="k8s.io/kubernetes"{print $2}' "$here/go.mod" | head -n1)
cache_root=${POLYCRATE_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/polycrate-operator}
out="$cache_root/k8s-$version-$key"

missing() { for b in "${bins[@]}"; do [ -x "$out/$b" ] || echo "$b"; done; }
if [ -z "$(missing)" ]; then echo "$out"; exit 0; fi

mkdir -p "$out"
lock="$cache_root/.build.lock"
exec 9>"$lock"
flock 9
# another build may have built some of them while we waited for the lock
todo=$(missing)
if [ -z "$todo" ]; then echo "$out"; exit 0; fi

major=${version#v}; major=${major%%.*}
minor=${version#v*.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor"
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod
cd "$here"
start=$(date +%s)
for name in $todo; do
  case "$name" in
    etcd) pkg=go.etcd.io/etcd/server/v3 ;;
    *) pkg=k8s.io/kubernetes/cmd/$name ;;
  esac
  echo "building $name ($pkg) …" >&2
  t=$(date +%s)
  go build -trimpath -ldflags "$ldflags" -o "$out/$name.tmp" "$pkg"
  mv "$out/$name.tmp" "$out/$name"
  echo "built $name in $(( $(date +%s) - t ))s" >&2
done
echo "built $(echo $todo) in $(( $(date +%s) - start ))s into $out" >&2
echo "$out"
