#!/usr/bin/env bash
# Builds go-containerregistry's `crane` (the daemonless image tool) from the Go module proxy at a pinned version,
# into a cache outside the repo, and prints its path (last line). Skipped when the binary is already there.
set -euo pipefail
version=v0.22.1
cache_root=${POLYCRATE_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/polycrate-operator}
out="$cache_root/crane-$version"
if [ -x "$out/crane" ]; then echo "$out/crane"; exit 0; fi
mkdir -p "$out"
exec 9>"$cache_root/.crane.lock"
flock 9
if [ -x "$out/crane" ]; then echo "$out/crane"; exit 0; fi
echo "building crane $version …" >&2
CGO_ENABLED=0 GOTOOLCHAIN=local GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w" "github.com/google/go-containerregistry/cmd/crane@$version" >&2
mv "$out.tmp/crane" "$out/crane"
rmdir "$out.tmp"
echo "$out/crane"
