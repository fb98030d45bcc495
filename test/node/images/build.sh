#!/usr/bin/env bash
# Builds the test Node's own images without a registry or a Docker engine: each program here (pause: the Pod
# sandbox; echo: a tiny HTTP server for the tests) is compiled statically and packaged with go-containerregistry's
# crane into an image archive that `ctr images import` loads. The layer is a reproducible tar (sorted, uid/gid 0,
# mtime 0). crane sets the entrypoint only on an image in a registry, so a throwaway in-memory `crane registry
# serve` on loopback holds the image between `append` and `mutate`.
#
# Output, cached outside the repo by the hash of the sources: <dir>/<name>.tar and <dir>/<name>.ref (the image
# name, polycrate.local/<name>:<hash>). Prints <dir> on stdout (last line).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
names=(pause echo)
key=$(cd "$here" && cat go.mod build.sh */main.go | sha256sum | cut -c1-12)
cache_root=${POLYCRATE_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/polycrate-operator}
out="$cache_root/node-images-$key"
complete() { for n in "${names[@]}"; do [ -s "$out/$n.tar" ] && [ -s "$out/$n.ref" ] || return 1; done; }
if complete; then echo "$out"; exit 0; fi

mkdir -p "$out"
exec 9>"$cache_root/.node-images.lock"
flock 9
if complete; then echo "$out"; exit 0; fi

crane=$(bash "$here/../../../scripts/image/crane.sh")
work=$(mktemp -d)
registry_pid=
cleanup() {
  [ -n "$registry_pid" ] && kill "$registry_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$crane" registry serve --address 127.0.0.1:0 >"$work/registry.log" 2>&1 &
registry_pid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$work/registry.log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "crane registry serve did not start: $(cat "$work/registry.log")" >&2; exit 1; }

for name in "${names[@]}"; do
  echo "building image $name …" >&2
  mkdir -p "$work/$name/rootfs"
  (cd "$here" && CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -ldflags "-s -w" -o "$work/$name/rootfs/$name" "./$name")
  tar --create --file "$work/$name/layer.tar" --directory "$work/$name/rootfs" --sort=name --owner=0 --group=0 \
    --numeric-owner --mtime=@0 --mode='u+rwX,go+rX,go-w' --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime "$name"
  staged="127.0.0.1:$port/$name:build"
  ref="polycrate.local/$name:$key"
  "$crane" append --oci-empty-base --platform linux/amd64 -f "$work/$name/layer.tar" -t "$staged" >/dev/null
  "$crane" mutate "$staged" --entrypoint "/$name" --set-platform linux/amd64 -t "$ref" -o "$work/$name/image.tar" >/dev/null
  mv "$work/$name/image.tar" "$out/$name.tar"
  echo "$ref" >"$out/$name.ref"
done
echo "$out"
