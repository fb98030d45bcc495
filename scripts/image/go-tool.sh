#!/usr/bin/env bash
# Builds one of the image tools from the Go module proxy at a pinned version, into a cache outside the repo, and
# prints its path (last line). Skipped when the binary is already there.
#
#   bash scripts/image/go-tool.sh crane|oras|syft
#
# crane (go-containerregistry) assembles the image, oras attaches its SBOMs as OCI referrers; syft (not used by the
# build: `npm run image:scan`) lists what scanners find in the image.
set -euo pipefail
case "${1:-}" in
  crane) version=v0.22.1; package=github.com/google/go-containerregistry/cmd/crane ;;
  oras) version=v1.3.6; package=oras.land/oras/cmd/oras ;;
  # syft prints its version from main.version (a release build sets it; go install leaves "[not provided]").
  syft) version=v1.57.2; package=github.com/anchore/syft/cmd/syft; ldflags="-X main.version=$version" ;;
  *) echo "usage: go-tool.sh crane|oras|syft" >&2; exit 2 ;;
esac
tool=$1
cache_root=${POLYCRATE_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/polycrate-operator}
out="$cache_root/$tool-$version"
if [ -x "$out/$tool" ]; then echo "$out/$tool"; exit 0; fi
mkdir -p "$out"
exec 9>"$cache_root/.$tool.lock"
flock 9
if [ -x "$out/$tool" ]; then echo "$out/$tool"; exit 0; fi
echo "building $tool $version …" >&2
rm -rf "$out.tmp"
CGO_ENABLED=0 GOTOOLCHAIN=local GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w ${ldflags:-}" "$package@$version" >&2
mv "$out.tmp/$tool" "$out/$tool"
rmdir "$out.tmp"
echo "$out/$tool"
