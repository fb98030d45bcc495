#!/usr/bin/env bash
# `npm run image:scan`: what a scanner finds in the image that `npm run image` built, offline: syft (built from the
# Go module proxy at its pinned version, cached outside the repo; the first build takes minutes) lists the OS, its
# Debian packages, the Node binary and the npm packages of each platform.
#
#   bash scripts/image/scan.sh [DIR] [-- syft flags…]    (DIR: the build's output, default dist/image)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=dist/image
if [ $# -gt 0 ] && [ "$1" != -- ]; then dir=$1; shift; fi
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || set -- -o table
archive=$(cd "$repo" && ls "$dir"/polycrate-*.oci.tar 2>/dev/null | head -1)
[ -n "$archive" ] || { echo "no image in $dir: run npm run image first" >&2; exit 1; }
syft=$(bash "$repo/scripts/image/go-tool.sh" syft | tail -1)
for arch in amd64 arm64; do
  echo "== linux/$arch ($archive)"
  (cd "$repo" && SYFT_CHECK_FOR_APP_UPDATE=false "$syft" scan "oci-archive:$archive" --platform "linux/$arch" -q "$@")
done
