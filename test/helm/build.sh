#!/usr/bin/env bash
# Builds the real helm (v4) from the Go module proxy at a pinned version, into the cache of the other tools
# (~/.cache/polycrate-operator/helm-<version>), and prints its path (last line). Skipped when it is already there.
#
#   bash test/helm/build.sh
#
# The chart tests (test/integration/helm-chart.test.ts, helm-real-node.test.ts) run `helm lint`, `helm template`
# and `helm install/upgrade/uninstall` with it; `npm run chart` does not need it.
set -euo pipefail
version=v4.3.2
module=helm.sh/helm/v4
cache_root=${POLYCRATE_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/polycrate-operator}
out="$cache_root/helm-$version"
if [ -x "$out/helm" ]; then echo "$out/helm"; exit 0; fi
mkdir -p "$out"
exec 9>"$cache_root/.helm.lock"
flock 9
if [ -x "$out/helm" ]; then echo "$out/helm"; exit 0; fi
echo "building helm $version …" >&2
start=$SECONDS
rm -rf "$out.tmp"
# `helm version` prints internal/version.version (a release build sets it; go install leaves its default).
CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod GOBIN="$out.tmp" \
  go install -trimpath -ldflags "-s -w -X $module/internal/version.version=$version" "$module/cmd/helm@$version" >&2
mv "$out.tmp/helm" "$out/helm"
rmdir "$out.tmp"
echo "helm $version built in $(( SECONDS - start ))s into $out" >&2
echo "$out/helm"
