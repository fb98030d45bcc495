#!/usr/bin/env bash
# Builds VictoriaMetrics' vmagent, the scraper a VMServiceScrape configures, from the Go module proxy (no repository
# clone): `go install github.com/VictoriaMetrics/VictoriaMetrics/app/vmagent@<version>` (~3-5 min cold on 2 cores,
# 14 MB). The binary goes to the tests' cache (~/.cache/polycrate-operator/vmagent-<version>/vmagent), keyed by the
# version; one that is already there is not built again. Prints its path on stdout.
#
#   bash test/vmagent/build.sh            # VMAGENT_VERSION overrides the version below
set -euo pipefail
version=${VMAGENT_VERSION:-v1.150.0}
cache_root=${POLYCRATE_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/polycrate-operator}
out="$cache_root/vmagent-$version"
if [ ! -x "$out/vmagent" ]; then
  mkdir -p "$out"
  exec 9>"$cache_root/.build.lock"
  flock 9
  if [ ! -x "$out/vmagent" ]; then
    echo "building vmagent $version from the Go module proxy …" >&2
    start=$SECONDS
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    CGO_ENABLED=0 GOTOOLCHAIN=local GOBIN="$tmp" go install -trimpath \
      -ldflags "-s -w -X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=vmagent-$version" \
      "github.com/VictoriaMetrics/VictoriaMetrics/app/vmagent@$version"
    mv "$tmp/vmagent" "$out/vmagent"
    echo "vmagent built in $(( SECONDS - start ))s into $out" >&2
  fi
  flock -u 9
fi
echo "$out/vmagent"
